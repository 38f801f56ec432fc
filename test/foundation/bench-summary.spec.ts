// `npm run bench` (bench/all.mjs) stamps bench/results/summary.json with this run's date and commit:
// a benchmark that failed in the run left its result file as an earlier run wrote it, so none of
// its figures may appear there under the new stamp. Run in a copy of bench/ whose result files hold
// known figures, with wrong settings that make the chosen benchmarks fail before they start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/processes.js';

const AGENTS = { agents_worker_echo_turns_per_s: 5000, agents_tool_vs_mcp_ratio: 0.7 };
const DISPATCH = {
  dispatch_a_cpu_per_request_ratio: 3,
  dispatch_a_req_per_s_ratio_two_processes: 0.5,
  dispatch_a_p99_ratio: 3,
  dispatch_b_cpu_per_request_ratio: 2.8,
  dispatch_b_req_per_s_ratio: 0.4,
};

/** A copy of the repository's bench/ (scripts only) with earlier results of known figures. */
function benchCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-summary-'));
  mkdirSync(join(dir, 'bench', 'results'), { recursive: true });
  for (const f of readdirSync(join(repoRoot, 'bench')).filter((f) => f.endsWith('.mjs')))
    cpSync(join(repoRoot, 'bench', f), join(dir, 'bench', f));
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  symlinkSync(join(repoRoot, 'scripts'), join(dir, 'scripts'));
  symlinkSync(join(repoRoot, 'test'), join(dir, 'test'));
  writeFileSync(join(dir, 'bench', 'results', 'agents.json'), JSON.stringify({ summary: AGENTS }));
  writeFileSync(join(dir, 'bench', 'results', 'dispatch.json'), JSON.stringify({ summary: DISPATCH }));
  return dir;
}

function runAll(dir: string, skip: string, env: Record<string, string>) {
  const r = spawnSync(process.execPath, [join(dir, 'bench', 'all.mjs'), `--skip=${skip}`], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 120_000,
  });
  const summary = JSON.parse(readFileSync(join(dir, 'bench', 'results', 'summary.json'), 'utf8')) as Record<string, unknown>;
  return { status: r.status, stderr: r.stderr, summary };
}

test('the figures of a benchmark that failed in the run are null in summary.json', () => {
  const dir = benchCopy();
  const r = runAll(dir, 'bus,directory,ledgers,soak', { BENCH_ONLY: 'both', BENCH_ROUNDS: '0' });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /bench: BENCH_ONLY="both"/);
  assert.match(r.stderr, /bench: BENCH_ROUNDS="0"/);
  assert.match(r.stderr, /failed: dispatch \(exit 2\), agents \(exit 2\)/);
  for (const key of [...Object.keys(AGENTS), ...Object.keys(DISPATCH)]) assert.equal(r.summary[key], null, key);
});

test('a benchmark left out by --skip keeps the figures of its result file; a failed one does not', () => {
  const dir = benchCopy();
  const r = runAll(dir, 'bus,directory,agents,ledgers,soak', { BENCH_ROUNDS: '0' });
  assert.equal(r.status, 1, r.stderr);
  for (const [key, value] of Object.entries(AGENTS)) assert.equal(r.summary[key], value, key);
  for (const key of Object.keys(DISPATCH)) assert.equal(r.summary[key], null, key);
});
