#!/usr/bin/env node
// `npm run fuzz [-- --runs N] [filter…]`: the schema-driven fuzz suites (test/fuzz/) with N runs per
// surface (default: the suites' own count, as in `npm test`), against the real broker and Postgres.
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const env = { ...process.env };
const filters = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--runs' || a.startsWith('--runs=')) {
    const value = a.includes('=') ? a.slice('--runs='.length) : args[++i];
    if (!/^[1-9]\d*$/.test(value ?? '')) {
      console.error(`fuzz: --runs expects a positive integer, got ${JSON.stringify(value)}`);
      process.exit(2);
    }
    env.FUZZ_RUNS = value;
  } else filters.push(a);
}
const runner = new URL('./run-tests.mjs', import.meta.url).pathname;
const r = spawnSync(process.execPath, [runner, '--integration', ...(filters.length ? filters : ['fuzz'])], {
  stdio: 'inherit',
  env,
});
process.exit(r.status ?? 1);
