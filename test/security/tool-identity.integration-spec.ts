import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';
import { refundAgent } from '@mesh/app-agents';
import { ToolMeta } from '@mesh/tool-gateway';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { startTestBillingTools } from '../agents/agents-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';

// Tool calls carry the caller's tenant and subject and never the caller's bearer token: a
// recording proxy sits in front of billing-tools and sees every byte the worker sends it.

const env = await startTestDispatcher('sec-tools');
const billing = await startTestBillingTools(env.databaseUrl);
const target = new URL(billing.mcpUrl);
const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
const proxy = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    seen.push({ headers: req.headers, body: body.toString() });
    const up = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    up.end(body);
  });
});
await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
after(() => {
  proxy.closeAllConnections();
  proxy.close();
});
const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${target.pathname}`;
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
