import { test } from 'node:test';
import assert from 'node:assert/strict';
import { text } from '@mesh/agent-sdk';
import { childTaskId, MAX_DELEGATION_CHILDREN } from '@mesh/contract';
import { delegatedOutcome } from './delegated-outcome.js';
import { toWireParts } from './a2a-wire.js';

test('each child gets the id the dispatcher derives from the execution, its step and its ask', () => {
  const o = delegatedOutcome(
    'acme:p:1',
    [
      { agent: 'refund-agent', parts: [text('refund INV-1')] },
      { skill: 'invoice-lookup', parts: [text('INV-2')] },
    ],
    {
      join: 'first',
      timeoutMs: 5000,
    },
  );
  assert.equal(o.state, 'delegated');
  if (o.state !== 'delegated') return;
  assert.equal(o.join, 'first');
  assert.equal(o.timeoutMs, 5000);
  assert.deepEqual(
    o.children.map((c) => [c.step, c.taskId]),
    [
      [0, childTaskId('acme:p:1', 0, { agentId: 'refund-agent', parts: toWireParts([text('refund INV-1')]) })],
      [1, childTaskId('acme:p:1', 1, { skill: 'invoice-lookup', parts: toWireParts([text('INV-2')]) })],
    ],
  );
  assert.deepEqual(
    o.message.metadata?.['mesh/delegated_task_ids'],
    o.children.map((c) => c.taskId),
  );
  // The same ask in a re-run of the turn is the same child.
  const again = delegatedOutcome('acme:p:1', [{ agent: 'refund-agent', parts: [text('refund INV-1')] }]);
  assert.equal(again.state === 'delegated' && again.children[0].taskId, o.children[0].taskId);
});

test('a delegation the platform cannot carry out is refused in the handler, naming what is wrong', () => {
  const one = [{ agent: 'a', parts: [text('x')] }];
  assert.throws(() => delegatedOutcome('e', []), /delegate takes 1 to 16 children, got 0/);
  assert.throws(() => delegatedOutcome('e', Array(MAX_DELEGATION_CHILDREN + 1).fill(one[0])), /got 17/);
  assert.throws(() => delegatedOutcome('e', [{ parts: [text('x')] } as never]), /child 0 needs exactly one of agent and skill/);
  assert.throws(() => delegatedOutcome('e', [{ agent: 'a', skill: 's', parts: [text('x')] } as never]), /exactly one of agent and skill/);
  assert.throws(() => delegatedOutcome('e', [{ agent: 'a', parts: [] }]), /child 0 has no parts/);
  assert.throws(() => delegatedOutcome('e', one, { join: 'any' as never }), /join must be "all" or "first"/);
  assert.throws(() => delegatedOutcome('e', one, { timeoutMs: 0 }), /timeoutMs must be a positive integer/);
});
