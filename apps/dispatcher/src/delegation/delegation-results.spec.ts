import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildOutcome } from '@mesh/contract';
import { boundArtifacts } from './delegation-results.js';

const child = (step: number, textBytes: number): ChildOutcome => ({
  step,
  taskId: `child-${step}`,
  state: 'TASK_STATE_COMPLETED',
  artifacts: textBytes > 0 ? [{ artifactId: `a${step}`, parts: [{ text: 'x'.repeat(textBytes) }] }] : [],
});
const size = (c: ChildOutcome) => Buffer.byteLength(JSON.stringify(c.artifacts), 'utf8');

test("children's artifacts past the byte bound are left out, each such child marked truncated with its task id", () => {
  const children = [child(0, 400), child(1, 400), child(2, 400), child(3, 10)];
  const bound = size(children[0]) + size(children[1]) + size(children[3]);
  const out = boundArtifacts(children, bound);
  assert.deepEqual(
    out.map((c) => [c.step, c.taskId, c.artifacts.length, c.truncated ?? false]),
    [
      [0, 'child-0', 1, false],
      [1, 'child-1', 1, false],
      // Past the bound: its content dropped, its id kept for GetTask.
      [2, 'child-2', 0, true],
      // A later child that still fits keeps its artifacts.
      [3, 'child-3', 1, false],
    ],
  );
  assert.ok(out.filter((c) => !c.truncated).reduce((n, c) => n + size(c), 0) <= bound);
  assert.equal(out[0], children[0], 'a child within the bound is passed on as it was');
});

test('a child without artifacts is never marked; a bound of 0 leaves every artifact out', () => {
  const out = boundArtifacts([child(0, 0), child(1, 1)], 0);
  assert.equal(out[0].truncated, undefined);
  assert.deepEqual(out[1].artifacts, []);
  assert.equal(out[1].truncated, true);
});

test('multi-byte text counts in bytes, not characters', () => {
  const c: ChildOutcome = { step: 0, taskId: 't', state: 'TASK_STATE_COMPLETED', artifacts: [{ parts: [{ text: 'é'.repeat(100) }] }] };
  const chars = JSON.stringify(c.artifacts).length;
  assert.equal(boundArtifacts([c], chars)[0].truncated, true);
  assert.equal(boundArtifacts([c], size(c))[0].truncated, undefined);
});
