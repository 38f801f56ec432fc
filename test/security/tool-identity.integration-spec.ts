import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';
import { refundAgent } from '@mesh/app-agents';
import { ToolMeta } from '@mesh/tool-gateway';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { startTestBillingTools } from '../agents/agents-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';
import { recordingProxy } from '../support/tool-tokens.js';

// Tool calls carry the caller's tenant and subject and never the caller's bearer token: a
// recording proxy sits in front of billing-tools and sees every byte the worker sends it.

const env = await startTestDispatcher('sec-tools');
const billing = await startTestBillingTools(env.databaseUrl);
const { url: proxied, seen } = await recordingProxy(billing.mcpUrl);
await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'refund-agent',
  AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: proxied } }),
});
await publishAgents(env.kafka, env.topics, [
  agentRecord('refund-agent', {
    card: { ...agentRecord('refund-agent').card, name: refundAgent.card.name, skills: refundAgent.card.skills },
    channel: { keyTemplate: refundAgent.channel.keyTemplate, partitions: refundAgent.channel.partitions },
  }),
]);
await eventually('refund-agent served', async () => (await fetch(`${env.url}/a2a/refund-agent/.well-known/agent-card.json`)).ok);

const send = (text: string) => ({
  tenant: '',
  message: {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text' as const, value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    contextId: '',
    taskId: '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], returnImmediately: false, taskPushNotificationConfig: undefined },
  metadata: undefined,
});

test('billing-tools sees the caller tenant and subject in _meta, and never the caller bearer token', async () => {
  const client = await a2aClient(env.url, 'refund-agent', 'JSONRPC', 'demo-globex');
  const done = (await client.sendMessage(send('I was charged twice for INV-7001, please refund it.'))) as Task;
  assert.ok(done.status?.state !== undefined && done.status.state !== TaskState.TASK_STATE_UNSPECIFIED);
  const calls = seen.filter((s) => s.body.includes('"tools/call"'));
  assert.ok(calls.length >= 1, `at least one tool call went through the proxy (${seen.length} requests)`);
  for (const c of calls) {
    const msg = JSON.parse(c.body) as { params: { _meta?: Record<string, unknown> } };
    assert.equal(msg.params._meta?.[ToolMeta.tenant], 'globex', 'tenant of the caller');
    assert.equal(msg.params._meta?.[ToolMeta.subject], 'bob', 'subject of the caller');
  }
  for (const s of seen) {
    const wire = JSON.stringify(s.headers) + s.body;
    assert.ok(!wire.includes('demo-globex'), 'the caller API key never reaches the tool server');
    assert.ok(!/bearer\s+demo-/i.test(wire), 'no caller bearer token in any header or body');
  }
});
