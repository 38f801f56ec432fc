import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { a2aClient } from '../support/dispatcher-harness.js';
import { startRefundStack, textMessage } from '../support/refund-stack.js';
import { refundCount } from './agents-fixtures.js';
import { addDuplicateInvoice } from './runtime-fixtures.js';
import { textMessage as cliTextMessage } from '@mesh/app-cli';
import { eventually } from '../support/infra.js';

const { env, billing } = await startRefundStack('agents-e2e');
const message = textMessage;

test('the refund conversation end to end through the dispatcher with the official A2A client', async () => {
  const client = await a2aClient(env.url, 'refund-agent', 'JSONRPC');
  const asked = (await client.sendMessage(message('Hi, I was charged twice.'))) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const question = (asked.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
  assert.match(question, /Which invoice/);

  const done = (await client.sendMessage(message('It is INV-2291.', { taskId: asked.id, contextId: asked.contextId }))) as Task;
  assert.equal(done.id, asked.id);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  const data = done.artifacts.flatMap((a) => a.parts).find((p) => p.content?.$case === 'data');
  const refund = data?.content?.$case === 'data' ? (data.content.value as Record<string, unknown>) : {};
  assert.equal(refund.invoice_id, 'INV-2291');
  assert.equal(refund.state, 'refunded');
  assert.equal(typeof refund.refund_id, 'string');
  assert.equal(await refundCount(env.databaseUrl, 'acme', 'INV-2291'), 1);
});

test('a refund that went through before the cancel reached it is not hidden: the CANCELED task says it was applied', async () => {
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-9120');
  // The refund commits, then the call hangs: the cancel aborts a call whose effect already happened.
  billing.hooks.delay('issue_refund', { phase: 'after-commit', ms: 15000 });
  const calls = billing.hooks.calls('issue_refund');
  const client = await a2aClient(env.url, 'refund-agent', 'JSONRPC');
  const task = (await client.sendMessage(cliTextMessage('Please refund INV-9120', {}, false))) as Task;
  await eventually('the refund is committed', async () => (await refundCount(env.databaseUrl, 'acme', 'INV-9120')) === 1);
  const canceled = await client.cancelTask({ id: task.id, tenant: '', metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  // The worker aborts the call, the reconciler finds the refund, the worker reports it.
  const reported = await eventually(
    "the worker's report is on the task",
    async () => {
      const t = await client.getTask({ id: task.id, tenant: '', historyLength: undefined });
      return t.status?.message?.metadata?.['mesh/agent_state'] ? t : undefined;
    },
    30000,
  );
  assert.equal(reported.status?.state, TaskState.TASK_STATE_CANCELED, 'the state the caller was told stays');
  assert.equal(reported.status?.message?.metadata?.['mesh/agent_state'], 'TASK_STATE_CANCELED');
  const effects = reported.status?.message?.metadata?.['mesh/side_effects'] as Array<Record<string, unknown>>;
  assert.deepEqual(
    effects.map((e) => [e.tool, e.outcome]),
    [['mcp__billing__issue_refund', 'applied']],
  );
  assert.equal(await refundCount(env.databaseUrl, 'acme', 'INV-9120'), 1);
  assert.equal(billing.hooks.calls('issue_refund') - calls, 1, 'never called again');
  billing.hooks.clear();
});

test('two tasks refunding the same invoice at once: one refunds, the other answers already_refunded with that refund', async () => {
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-9130');
  // Both tasks read the invoice as refundable, then both reach issue_refund: the second one to
  // take the invoice's row lock finds nothing left to refund.
  billing.hooks.delay('issue_refund', { phase: 'before', ms: 1500, times: 2 });
  const client = await a2aClient(env.url, 'refund-agent', 'JSONRPC');
  const tasks = (await Promise.all([
    client.sendMessage(message('Please refund INV-9130')),
    client.sendMessage(message('Refund the duplicate charge on INV-9130')),
  ])) as Task[];
  billing.hooks.clear();
  const refunds = tasks.map((t) => {
    const part = t.artifacts.flatMap((a) => a.parts).find((p) => p.content?.$case === 'data');
    return { state: t.status?.state, refund: part?.content?.$case === 'data' ? (part.content.value as Record<string, unknown>) : {} };
  });
  assert.deepEqual(
    refunds.map((r) => r.state),
    [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_COMPLETED],
  );
  const issued = refunds.find((r) => r.refund.state === 'refunded');
  const settled = refunds.find((r) => r.refund.state === 'already_refunded');
  assert.ok(issued && settled, JSON.stringify(refunds.map((r) => r.refund)));
  assert.equal(typeof issued.refund.refund_id, 'string');
  assert.equal(settled.refund.refund_id, issued.refund.refund_id, 'the loser names the refund that settled the invoice');
  assert.equal(await refundCount(env.databaseUrl, 'acme', 'INV-9130'), 1);
});
