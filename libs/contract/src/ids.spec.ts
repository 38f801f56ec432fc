import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { executionId, idempotencyKey, isAgentId, newId, slugify } from './ids.js';

test('execution id is {tenant}:{task_id}:{turn} and stable for the same inputs', () => {
  assert.equal(executionId('acme', 'task-1', 0), 'acme:task-1:0');
  assert.equal(executionId('acme', 'task-1', 2), executionId('acme', 'task-1', 2));
  assert.throws(() => executionId('acme', 'task-1', -1), /non-negative/);
  assert.throws(() => executionId('Acme:x', 'task-1', 0), /invalid tenant/);
});

test('idempotency key is {tenant}:{task_id}:{tool}:{args_hash}', () => {
  assert.equal(idempotencyKey('acme', 't1', 'issue_refund', 'ab12'), 'acme:t1:issue_refund:ab12');
});

test('slugify always yields a valid agent id', () => {
  assert.equal(slugify('Refund Agent'), 'refund-agent');
  assert.equal(slugify('Ünïcode  Bot!!'), 'unicode-bot');
  assert.equal(slugify('***'), 'agent');
  fc.assert(fc.property(fc.string({ maxLength: 200 }), (s) => isAgentId(slugify(s))));
});

test('new ids are unique', () => {
  const ids = new Set(Array.from({ length: 1000 }, newId));
  assert.equal(ids.size, 1000);
});
