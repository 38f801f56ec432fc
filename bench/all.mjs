#!/usr/bin/env node
// npm run bench — every benchmark, one after the other (each writes bench/results/*.json), then
// the soak. Flags: --short (soak 60 s instead of 10 min), --skip=bus,agents (names to leave out).
// Benchmarks are never part of `npm test`. Exit code: non-zero when any of them failed.
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const skip = new Set((process.argv.find((a) => a.startsWith('--skip=')) ?? '--skip=').slice(7).split(',').filter(Boolean));
const short = process.argv.includes('--short');
const benches = [
  ['bus', 'bench/bus.bench.mjs'],
  ['directory', 'bench/directory.bench.mjs'],
  ['dispatch', 'bench/dispatch.mjs'],
  ['agents', 'bench/agents.mjs'],
  ['soak', 'bench/soak.mjs', ...(short ? ['--short'] : [])],
];
const failed = [];
for (const [name, script, ...args] of benches) {
  if (skip.has(name)) continue;
  console.error(`\n=== bench: ${name} (${new Date().toISOString()}) ===`);
  const r = spawnSync(process.execPath, [script, ...args], { cwd: root, stdio: 'inherit', env: process.env });
  if (r.status !== 0) failed.push(`${name} (exit ${r.status ?? r.signal})`);
}
console.error(failed.length ? `\nbench: failed: ${failed.join(', ')}` : '\nbench: all done; results in bench/results/');
process.exit(failed.length ? 1 : 0);
