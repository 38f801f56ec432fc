import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TenantStreamSlots } from './stream-slots.js';

test('a tenant gets at most its cap of slots; other tenants are not affected', () => {
  const slots = new TenantStreamSlots(2);
  const a1 = slots.reserve('acme');
  const a2 = slots.reserve('acme');
  assert.ok(a1 && a2);
  assert.equal(slots.reserve('acme'), undefined);
  assert.ok(slots.reserve('globex'));
  assert.equal(slots.open('acme'), 2);
  assert.equal(slots.open('globex'), 1);
});

test('a release gives the slot back once, however often it is called', () => {
  const slots = new TenantStreamSlots(1);
  const release = slots.reserve('acme')!;
  release();
  release();
  assert.equal(slots.open('acme'), 0);
  const again = slots.reserve('acme');
  assert.ok(again);
  // The old release called again must not free the new holder's slot.
  release();
  assert.equal(slots.open('acme'), 1);
  assert.equal(slots.reserve('acme'), undefined);
});
