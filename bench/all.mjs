#!/usr/bin/env node
// npm run bench — every benchmark, one after the other (each writes bench/results/*.json), then
// the soak, then bench/results/summary.json: date, machine, commit and the headline figures of
// agents.json and dispatch.json (their `summary` objects; a figure missing there, or of a benchmark
// that failed in this run, is null). Flags:
// --short (soak 60 s instead of 10 min), --skip=bus,agents (names to leave out). Benchmarks are
// never part of `npm test`. Exit code: non-zero when any of them failed.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { machine, measuredCommit } from './run-facts.mjs';

const root = new URL('..', import.meta.url).pathname;
const skip = new Set((process.argv.find((a) => a.startsWith('--skip=')) ?? '--skip=').slice(7).split(',').filter(Boolean));
const short = process.argv.includes('--short');
const benches = [
  ['bus', 'bench/bus.bench.mjs'],
  ['directory', 'bench/directory.bench.mjs'],
  ['dispatch', 'bench/dispatch.mjs'],
  ['agents', 'bench/agents.mjs'],
  ['ledgers', 'bench/ledgers.mjs'],
  ['soak', 'bench/soak.mjs', ...(short ? ['--short'] : [])],
];
// Read before the benchmarks run: they rewrite bench/results/.
const commit = measuredCommit();
// Each benchmark that failed here, with how it ended.
const failed = new Map();
for (const [name, script, ...args] of benches) {
  if (skip.has(name)) continue;
  console.error(`\n=== bench: ${name} (${new Date().toISOString()}) ===`);
  const r = spawnSync(process.execPath, [script, ...args], { cwd: root, stdio: 'inherit', env: process.env });
  if (r.status !== 0) failed.set(name, `exit ${r.status ?? r.signal}`);
}
// The keys issue 19's targets are read from (written by bench/agents.mjs and bench/dispatch.mjs).
const SUMMARY_KEYS = {
  agents: ['agents_worker_echo_turns_per_s', 'agents_tool_vs_mcp_ratio'],
  dispatch: [
    'dispatch_a_cpu_per_request_ratio',
    'dispatch_a_req_per_s_ratio_two_processes',
    'dispatch_a_p99_ratio',
    'dispatch_b_cpu_per_request_ratio',
    'dispatch_b_req_per_s_ratio',
  ],
};
const summaryOf = (name) => {
  try {
    return JSON.parse(readFileSync(`${root}bench/results/${name}.json`, 'utf8')).summary ?? {};
  } catch {
    return {};
  }
};
const figures = {};
for (const [name, keys] of Object.entries(SUMMARY_KEYS)) {
  // A benchmark that failed here left its file as an earlier run wrote it (or half-written): none of
  // its figures may carry this run's date and commit.
  const found = failed.has(name) ? {} : summaryOf(name);
  Object.assign(figures, found);
  for (const k of keys) if (typeof found[k] !== 'number') figures[k] = null;
}
writeFileSync(
  `${root}bench/results/summary.json`,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: machine(),
      commit,
      ...figures,
    },
    null,
    2,
  )}\n`,
);
const failures = [...failed].map(([name, how]) => `${name} (${how})`);
console.error(failures.length ? `\nbench: failed: ${failures.join(', ')}` : '\nbench: all done; results in bench/results/');
process.exit(failures.length ? 1 : 0);
