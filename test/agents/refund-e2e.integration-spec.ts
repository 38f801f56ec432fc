import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { loadAgentsConfig, refundAgent, startAgents } from '@mesh/app-agents';
import { eventually, testRun } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { refundCount, startTestBillingTools } from './agents-fixtures.js';

const env = await startTestDispatcher('agents-e2e');
const billing = await startTestBillingTools(env.databaseUrl);
const agents = await startAgents({
  ...loadAgentsConfig({
    KAFKA_BROKERS: testRun().brokers.join(','),
    TOPIC_PREFIX: env.prefix,
    DATABASE_URL: env.databaseUrl,
    AGENTS_RUN: 'refund-agent',
    AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl } }),
  }),
  AGENTS_PORT: 0,
});
after(() => agents.stop());
await publishAgents(env.kafka, env.topics, [
  agentRecord('refund-agent', {
    card: { ...agentRecord('refund-agent').card, name: refundAgent.card.name, skills: refundAgent.card.skills },
    channel: { keyTemplate: refundAgent.channel.keyTemplate, partitions: refundAgent.channel.partitions },
  }),
]);
await eventually('refund-agent card served', async () => (await fetch(`${env.url}/a2a/refund-agent/.well-known/agent-card.json`)).ok);

const message = (text: string, ids: { taskId?: string; contextId?: string } = {}) => ({
  tenant: '',
  message: {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text' as const, value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    contextId: ids.contextId ?? '',
    taskId: ids.taskId ?? '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], returnImmediately: false, taskPushNotificationConfig: undefined },
  metadata: undefined,
});

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
