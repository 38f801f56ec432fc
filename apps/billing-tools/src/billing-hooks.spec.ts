import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BillingHooks } from './billing-hooks.js';

test('test hooks cannot be armed unless enabled by config', async () => {
  const off = new BillingHooks(false);
  assert.throws(() => off.delay('issue_refund', { phase: 'before', ms: 1000 }), /disabled/);
  await off.at('issue_refund', 'before', new AbortController().signal);
  assert.equal(off.calls('issue_refund'), 1, 'calls are still counted');
});

test('an armed delay ends early with CANCELLED when the caller aborts', async () => {
  const on = new BillingHooks(true);
  on.delay('get_invoice', { phase: 'before', ms: 60000 });
  const ac = new AbortController();
  const waiting = on.at('get_invoice', 'before', ac.signal);
  ac.abort();
  await assert.rejects(waiting, /cancelled/);
  assert.equal(on.aborted('get_invoice'), 1);
  await on.at('get_invoice', 'before', ac.signal); // used up: no delay the second time
});
