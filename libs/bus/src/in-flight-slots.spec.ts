import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InFlightSlots } from './in-flight-slots.js';

test('the global and the per-tenant budget both bound reservations', () => {
  const s = new InFlightSlots(3, 2);
  assert.ok(s.tryReserve('a'));
  assert.ok(s.tryReserve('a'));
  assert.ok(!s.tryReserve('a'), 'tenant a is at its limit');
  assert.ok(s.tryReserve('b'));
  assert.ok(!s.tryReserve('c'), 'global limit reached');
  assert.deepEqual(s.perTenant(), { a: 2, b: 1 });
  s.release('a');
  assert.ok(s.canReserve('c'));
  assert.equal(s.inFlight, 2);
});

test('rejects bad limits and releases without a reservation', () => {
  assert.throws(() => new InFlightSlots(0), RangeError);
  assert.throws(() => new InFlightSlots(1, 0), RangeError);
  assert.throws(() => new InFlightSlots(1).release('x'));
});

test('a slot taken without a tenant passes a tenant at its limit and counts against the global budget', () => {
  const s = new InFlightSlots(3, 1);
  assert.ok(s.tryReserve('a'));
  assert.ok(!s.canReserve('a'));
  assert.ok(s.tryReserve(undefined), 'outside the per-tenant limit');
  assert.deepEqual(s.perTenant(), { a: 1 });
  assert.ok(s.tryReserve(undefined));
  assert.ok(!s.tryReserve(undefined), 'global limit reached');
  s.release(undefined);
  assert.equal(s.inFlight, 2);
});
