import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildOutcome } from '@mesh/contract';
import { boundChildResults } from './delegation-results.js';

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
  const out = boundChildResults(children, bound);
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
  const out = boundChildResults([child(0, 0), child(1, 1)], 0);
  assert.equal(out[0].truncated, undefined);
  assert.deepEqual(out[1].artifacts, []);
  assert.equal(out[1].truncated, true);
});

test('multi-byte text counts in bytes, not characters', () => {
  const c: ChildOutcome = { step: 0, taskId: 't', state: 'TASK_STATE_COMPLETED', artifacts: [{ parts: [{ text: 'é'.repeat(100) }] }] };
  const chars = JSON.stringify(c.artifacts).length;
  assert.equal(boundChildResults([c], chars)[0].truncated, true);
  assert.equal(boundChildResults([c], size(c))[0].truncated, undefined);
});

test("a child's last status message counts too: one past the bound is left out, the child marked truncated", () => {
  const withMessage = (step: number, textBytes: number): ChildOutcome => ({
    ...child(step, 10),
    message: { role: 'ROLE_AGENT', parts: [{ text: 'm'.repeat(textBytes) }] },
  });
  const children = [withMessage(0, 100), withMessage(1, 5000), withMessage(2, 100)];
  const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), 'utf8');
  const bound = size(children[0]) + bytes(children[0].message) + size(children[1]) + size(children[2]) + bytes(children[2].message);
  const out = boundChildResults(children, bound);
  assert.deepEqual(
    out.map((c) => [c.step, c.artifacts.length, c.message !== undefined, c.truncated ?? false]),
    [
      [0, 1, true, false],
      // Its artifacts fit, its 5,000-byte message does not: left out, the child marked.
      [1, 1, false, true],
      [2, 1, true, false],
    ],
  );
});
