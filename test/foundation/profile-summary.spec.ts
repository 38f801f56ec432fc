// bench/profile-summary.mjs is what docs/benchmarks.md's profile tables come from: this checks its
// grouping on a small profile whose answer is known — a socket write under pg charged to pg,
// express's middleware as one part, HTTP parsing apart, idle time left out, the window honoured —
// and that a wrong invocation fails with its usage line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/processes.js';

const script = join(repoRoot, 'bench', 'profile-summary.mjs');
const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, scriptId: '0', lineNumber: 0, columnNumber: 0 },
  children,
});

/** A sample of each node id given, 1 ms apart; a sample stands for the time until the next one. */
function profileOf(samples: number[]) {
  const nodes = [
    frame(1, '(root)', '', [2, 3, 4, 7, 8, 9]),
    frame(2, '(idle)', ''),
    frame(3, '(garbage collector)', ''),
    frame(4, 'query', '/app/node_modules/pg/lib/client.js', [5]),
    frame(5, 'writeGeneric', 'node:internal/stream_base_commons', [6]),
    frame(6, 'writev', ''),
    frame(7, 'jsonParser', '/app/node_modules/body-parser/lib/types/json.js'),
    frame(8, 'parserOnHeadersComplete', 'node:_http_common'),
    frame(9, 'accept', '/app/apps/dispatcher/dist/tasks/task.service.js'),
  ];
  return { nodes, startTime: 0, endTime: samples.length * 1000, samples, timeDeltas: samples.map(() => 1000) };
}

function summarise(profile: unknown, ...args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'profile-summary-'));
  const file = join(dir, 'p.cpuprofile');
  writeFileSync(file, JSON.stringify(profile));
  return spawnSync(process.execPath, [script, file, ...args], { encoding: 'utf8' });
}

test('groups samples by the nearest library or module, Node internals charged to their caller', () => {
  // 4 × pg's socket write, 2 × body-parser, 1 × HTTP parsing, 2 × the dispatcher's tasks module,
  // 1 × GC, then idle (left out).
  const samples = [6, 6, 6, 6, 7, 7, 8, 9, 9, 3, 2, 2, 2, 2, 2];
  const r = summarise(profileOf(samples), '--json', '--from', '0', '--to', '60');
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { busyMs: number; rows: Array<{ group: string; share: number }> };
  assert.equal(out.busyMs, 10);
  assert.deepEqual(out.rows, [
    { group: 'pg', share: 40 },
    { group: 'express and its middleware', share: 20 },
    { group: 'apps/dispatcher/tasks', share: 20 },
    { group: 'Node HTTP', share: 10 },
    { group: '(garbage collector)', share: 10 },
  ]);
});

test('counts only the samples inside --from/--to', () => {
  // 1,500 samples of 1 ms: the first second is pg's, the rest the dispatcher's.
  const samples = [...Array.from({ length: 1000 }, () => 6), ...Array.from({ length: 500 }, () => 9)];
  const r = summarise(profileOf(samples), '--json', '--from', '1.1', '--to', '2');
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { rows: Array<{ group: string; share: number }> };
  assert.deepEqual(out.rows, [{ group: 'apps/dispatcher/tasks', share: 100 }]);
});

test('a window with no busy samples is refused, not summarised as shares of nothing', () => {
  const r = summarise(profileOf([2, 2, 2, 2]), '--json');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /no busy samples between/);
  assert.equal(r.stdout, '');
});

test('without a profile it prints its usage and exits 2', () => {
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /usage: node bench\/profile-summary\.mjs/);
});
