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
