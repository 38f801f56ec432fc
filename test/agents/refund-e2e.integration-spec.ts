import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { a2aClient } from '../support/dispatcher-harness.js';
import { startRefundStack, textMessage } from '../support/refund-stack.js';
import { refundCount } from './agents-fixtures.js';

const { env } = await startRefundStack('agents-e2e');
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
