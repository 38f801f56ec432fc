import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';

// A 0.3 caller (no A2A-Version) meets the same admission as a 1.0 one: the tenant's rate limit
// and the cap on open streams, answered 429 + Retry-After in its binding's error shape.
const env = await startTestDispatcher(
  'a2a-v03-admission',
  {},
  { DISPATCHER_TENANT_RATE_PER_S: '1', DISPATCHER_TENANT_BURST: '2', DISPATCHER_MAX_STREAMS_PER_TENANT: '1' },
);
// No worker: a stream opened on it stays open, holding its slot.
await publishAgents(env.kafka, env.topics, [agentRecord('held'), agentRecord('quick')]);
for (const id of ['held', 'quick'])
  await eventually(`${id} served`, async () => (await fetch(`${env.url}/a2a/${id}/.well-known/agent-card.json`)).status !== 404);

const message03 = (text: string) => ({ kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }] });
const rpc03 = (agent: string, token: string, method: string, params: unknown, signal?: AbortSignal) =>
  fetch(`${env.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    ...(signal ? { signal } : {}),
  });

test('0.3 message/send and /v1/message:send over the tenant rate: 429 + Retry-After, -32029 RATE_LIMITED', async () => {
  const answers: Response[] = [];
  for (let i = 0; i < 6; i++) {
    answers.push(await rpc03('quick', 'demo-acme', 'message/send', { message: message03(`r${i}`), configuration: { blocking: false } }));
  }
  const refused = answers.find((r) => r.status === 429);
  assert.ok(refused, `expected a 429 within the burst, got ${answers.map((r) => r.status).join(',')}`);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  const body = (await refused.json()) as { error: { code: number; data?: unknown } };
  assert.equal(body.error.code, -32029);
  assert.match(JSON.stringify(body.error), /RATE_LIMITED/);

  const rest = await fetch(`${env.url}/a2a/quick/v1/message:send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer demo-acme' },
    body: JSON.stringify({ message: message03('rest'), configuration: { blocking: false } }),
  });
  assert.equal(rest.status, 429, 'the bucket is still empty for the REST binding');
  assert.ok(Number(rest.headers.get('retry-after')) >= 1);
});

test('0.3 message/stream holds the tenant stream slot; 0.3 tasks/resubscribe over the cap is 429 TOO_MANY_STREAMS', async () => {
  const open = new AbortController();
  const stream = await rpc03('held', 'demo-globex', 'message/stream', { message: message03('wait here') }, open.signal);
  try {
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = stream.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const taskId = /"id":"([^"]+)"/.exec(first)?.[1];
    assert.ok(taskId, `the first event names the task: ${first}`);

    const second = await rpc03('held', 'demo-globex', 'tasks/resubscribe', { id: taskId });
    assert.equal(second.status, 429);
    assert.ok(Number(second.headers.get('retry-after')) >= 1);
    assert.match(await second.text(), /TOO_MANY_STREAMS/);
    const rest = await fetch(`${env.url}/a2a/held/v1/tasks/${taskId}:subscribe`, { headers: { authorization: 'Bearer demo-globex' } });
    assert.equal(rest.status, 429, 'the REST binding shares the cap');
  } finally {
    open.abort();
  }
  // The slot is given back when the caller goes away.
  await eventually('the slot is free again', async () => {
    const c = new AbortController();
    const r = await rpc03('held', 'demo-globex', 'message/stream', { message: message03('again') }, c.signal);
    c.abort();
    return r.status === 200;
  });
});
