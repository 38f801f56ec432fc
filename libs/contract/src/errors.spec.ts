import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anyCause, anyTransient, MeshError } from './errors.js';

test('anyCause looks through cause, driverError and AggregateError; anyTransient passes when one test does', () => {
  const marked = Object.assign(new Error('inner'), { code: 'X' });
  const isX = (e: { code?: unknown }) => e.code === 'X';
  assert.ok(anyCause(marked, isX));
  assert.ok(anyCause(Object.assign(new Error('Query failed'), { driverError: marked }), isX));
  assert.ok(anyCause(new AggregateError([marked], 'connect failed'), isX));
  assert.ok(anyCause(new MeshError('UNAVAILABLE', 'projection failed', { cause: marked }), isX));
  assert.ok(!anyCause(new Error('always fails'), isX));
  assert.ok(!anyCause(undefined, isX));
  const loop: { cause?: unknown } = {};
  loop.cause = loop;
  assert.ok(!anyCause(loop, isX), 'a cause cycle ends');

  const either = anyTransient(
    () => false,
    (err) => anyCause(err, isX),
  );
  assert.ok(either(marked));
  assert.ok(!either(new Error('no')));
});
