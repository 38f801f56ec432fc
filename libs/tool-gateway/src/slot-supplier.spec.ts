import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { SemaphoreSlotSupplier } from './slot-supplier.js';

test('a full supplier makes callers wait in order and hands slots over on release', async () => {
  const s = new SemaphoreSlotSupplier(1);
  const first = await s.reserve();
  const order: number[] = [];
  const second = s.reserve().then((slot) => (order.push(2), slot));
  const third = s.reserve().then((slot) => (order.push(3), slot));
  assert.equal(s.waiting, 2);
  first.release();
  first.release(); // double release is ignored
  (await second).release();
  (await third).release();
  assert.deepEqual(order, [2, 3]);
  assert.equal(s.inUse, 0);
});

test('an aborted wait leaves the queue and rejects with CANCELLED', async () => {
  const s = new SemaphoreSlotSupplier(1);
  const held = await s.reserve();
  const ac = new AbortController();
  const waiting = s.reserve(ac.signal);
  ac.abort(new Error('cancel'));
  await assert.rejects(waiting, (err: { code?: string }) => err.code === 'CANCELLED');
  assert.equal(s.waiting, 0);
  held.release();
  assert.equal(s.inUse, 0);
  assert.throws(() => new SemaphoreSlotSupplier(0), /capacity/);
});

test('waiters on one signal share one abort listener, removed with the last; an abort rejects them all', async () => {
  const s = new SemaphoreSlotSupplier(1);
  const held = await s.reserve();
  const ac = new AbortController();
  const granted = Array.from({ length: 12 }, () => s.reserve(ac.signal));
  assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
  held.release();
  for (const p of granted) (await p).release();
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);

  const again = await s.reserve();
  const cancelled = Array.from({ length: 12 }, () => s.reserve(ac.signal));
  assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
  ac.abort(new Error('cancel'));
  for (const p of cancelled) await assert.rejects(p, (err: { code?: string }) => err.code === 'CANCELLED');
  assert.equal(s.waiting, 0);
  again.release();
  assert.equal(s.inUse, 0);
});
