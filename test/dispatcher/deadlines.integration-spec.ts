import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';

const env = await startTestDispatcher('deadlines', {}, { DISPATCHER_MAX_DEADLINE_MS: '600000' });
await publishAgents(env.kafka, env.topics, [agentRecord('work')]);
const worker = await startManualWorker(env.kafka, env.topics, 'work');
after(() => worker.stop());
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/work/.well-known/agent-card.json`)).ok);
const post = (body: unknown, headers: Record<string, string> = {}) =>
  rawRequest(`${env.url}/a2a/work/message:send`, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

test('deadlines: the A2A-Deadline-Ms header and metadata deadlineUnixMs travel as deadline_unix_ms, capped by the maximum', async () => {
  const client = await a2aClient(env.url, 'work', 'HTTP+JSON');
  const before = Date.now();
  const t1 = (await client.sendMessage(sendRequest(userMessage('d1'), { returnImmediately: true }), {
    serviceParameters: { 'A2A-Deadline-Ms': '5000' },
  })) as Task;
  const c1 = await worker.run(t1.id);
  assert.ok(c1.identity.deadlineUnixMs! >= before + 5000 && c1.identity.deadlineUnixMs! <= Date.now() + 5000);
  const at = Date.now() + 60000;
  const t2 = (await client.sendMessage(
    sendRequest(userMessage('d2', { metadata: { deadlineUnixMs: at } }), { returnImmediately: true }),
  )) as Task;
  assert.equal((await worker.run(t2.id)).identity.deadlineUnixMs, at);
  const t3 = (await client.sendMessage(
    sendRequest(userMessage('d3', { metadata: { deadlineUnixMs: Date.now() + 86_400_000 } }), { returnImmediately: true }),
  )) as Task;
  assert.ok((await worker.run(t3.id)).identity.deadlineUnixMs! <= Date.now() + 600000);
  const bad = await post({ message: jsonMessage('d4'), configuration: { returnImmediately: true } }, { 'a2a-deadline-ms': 'soon' });
  assert.equal(bad.status, 400);
  const badMeta = await post({
    message: jsonMessage('d5', { metadata: { deadlineUnixMs: 'never' } }),
    configuration: { returnImmediately: true },
  });
  assert.equal(badMeta.status, 400);
});

test('a message answered with the same work keeps that task: retried after a cancel, it is not run again', async () => {
  const client = await a2aClient(env.url, 'work', 'JSONRPC');
  const contextId = `ctx-cancel-${Date.now()}`;
  const first = (await client.sendMessage(sendRequest(userMessage('once', { contextId }), { returnImmediately: true }))) as Task;
  const twin = userMessage('once', { contextId });
  assert.equal(((await client.sendMessage(sendRequest(twin, { returnImmediately: true }))) as Task).id, first.id);
  await worker.run(first.id);
  await client.cancelTask({ tenant: '', id: first.id, metadata: undefined });
  // The twin's retry: the task it was answered with (canceled), not a new task and a new run.
  const retried = (await client.sendMessage(sendRequest(twin, { returnImmediately: true }))) as Task;
  assert.equal(retried.id, first.id);
  assert.equal(retried.status?.state, TaskState.TASK_STATE_CANCELED);
  const runs = () => worker.commands.filter((c) => c.kind === 'task.run' && c.identity.contextId === contextId).length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(runs(), 1);
  // Reused with other content, the recorded id is refused like any reused messageId.
  const other = client.sendMessage(sendRequest({ ...twin, parts: userMessage('other').parts }, { returnImmediately: true }));
  await assert.rejects(other, /messageId/i);
  // A fresh message of the same work, now nothing runs, starts a new task; its id is recorded with it.
  const again = (await client.sendMessage(sendRequest(userMessage('once', { contextId }), { returnImmediately: true }))) as Task;
  assert.notEqual(again.id, first.id);
});

test('the same work (tenant, context, parts) while running returns the running task', async () => {
  const client = await a2aClient(env.url, 'work', 'JSONRPC');
  const contextId = `ctx-${Date.now()}`;
  const a = (await client.sendMessage(sendRequest(userMessage('same', { contextId }), { returnImmediately: true }))) as Task;
  const b = (await client.sendMessage(sendRequest(userMessage('same', { contextId }), { returnImmediately: true }))) as Task;
  assert.equal(b.id, a.id);
  const other = (await client.sendMessage(sendRequest(userMessage('different', { contextId }), { returnImmediately: true }))) as Task;
  assert.notEqual(other.id, a.id);
  const cmd = await worker.run(a.id);
  await worker.emit(cmd, [
    { seq: 0, artifact: 'ok' },
    { seq: 1, state: 'COMPLETED' },
  ]);
  await eventually('completed', async () => ((await client.getTask({ tenant: '', id: a.id, historyLength: 0 })).status?.state ?? 0) >= 3);
  const c = (await client.sendMessage(sendRequest(userMessage('same', { contextId }), { returnImmediately: true }))) as Task;
  assert.notEqual(c.id, a.id);
});
