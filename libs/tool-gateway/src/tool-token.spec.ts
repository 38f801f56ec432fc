import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HmacToolTokenMinter, verifyToolToken } from './tool-token.js';

const secret = 'a-test-secret-of-enough-length';

test('a minted token verifies for its audience only and carries tenant and subject', async () => {
  const token = await new HmacToolTokenMinter(secret).mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1' });
  assert.deepEqual(await verifyToolToken(token, secret, 'billing-tools'), { tenant: 'acme', subject: 'alice' });
  await assert.rejects(verifyToolToken(token, secret, 'other-server'));
  await assert.rejects(verifyToolToken(token, 'another-secret-of-enough-length', 'billing-tools'));
});

test('a call token of delegated work carries the actor chain (RFC 8693 act) and the narrowed scopes', async () => {
  const act = { sub: 'agent:refund-agent', act: { sub: 'agent:triage-agent', act: { sub: 'apikey:demo' } } };
  const token = await new HmacToolTokenMinter(secret).mint({
    audience: 'billing-tools',
    tenant: 'acme',
    subject: 'alice',
    taskId: 't1',
    act,
    scopes: ['billing:read'],
  });
  assert.deepEqual(await verifyToolToken(token, secret, 'billing-tools'), {
    tenant: 'acme',
    subject: 'alice',
    act,
    scopes: ['billing:read'],
  });
});
