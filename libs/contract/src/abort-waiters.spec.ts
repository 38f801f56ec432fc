import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { onAbort } from './abort-waiters.js';

test('waiters on one signal share one listener; one that leaves is not woken; the last removes it', () => {
  const ac = new AbortController();
  const woken: number[] = [];
  const leave = [1, 2, 3].map((n) => onAbort(ac.signal, () => woken.push(n)));
  assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
  leave[1]!();
  ac.abort();
  assert.deepEqual(woken, [1, 3]);
  leave[0]!();
  leave[2]!();
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);

  const other = new AbortController();
  const off = [onAbort(other.signal, () => undefined), onAbort(other.signal, () => undefined)];
  off.forEach((f) => f());
  assert.equal(getEventListeners(other.signal, 'abort').length, 0);
});

test('a waiter on a signal that has aborted is woken at once', () => {
  let woken = 0;
  const leave = onAbort(AbortSignal.abort(), () => woken++);
  assert.equal(woken, 1);
  leave();
  assert.equal(woken, 1);
});
