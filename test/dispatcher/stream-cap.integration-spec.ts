import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { listRequest, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { streamingClient } from '../support/streaming.js';
import { openRawSse, type RawSse } from '../support/raw-sse.js';

// Open streams are capped per tenant (here 3): the next one is refused with 429 TOO_MANY_STREAMS
// on both bindings, other tenants are not affected, and a slot comes back however a stream ended
// (its caller went away, its task settled, it was answered with an error).
const CAP = 3;
const env = await startTestDispatcher('stream-cap', {}, { DISPATCHER_MAX_STREAMS_PER_TENANT: String(CAP), DISPATCHER_RETRY_AFTER_S: '2' });
await publishAgents(env.kafka, env.topics, [agentRecord('capped')]);
const worker = await startManualWorker(env.kafka, env.topics, 'capped');
after(() => worker.stop());
await eventually('the agent is served', async () => (await fetch(`${env.url}/a2a/capped/.well-known/agent-card.json`)).ok);

const headers = (token: string) => ({ authorization: `Bearer ${token}`, 'a2a-version': '1.0' });
const open: RawSse[] = [];
after(() => open.forEach((s) => s.close()));

/** A task of the tenant in WORKING, with its run command. */
async function workingTask(token = 'demo-acme') {
  const client = await a2aClient(env.url, 'capped', 'HTTP+JSON', token);
  const id = ((await client.sendMessage(sendRequest(userMessage('stream me'), { returnImmediately: true }))) as Task).id;
  const cmd = await worker.run(id);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually(
    'WORKING',
    async () => (await client.getTask({ tenant: '', id, historyLength: 0 })).status?.state === TaskState.TASK_STATE_WORKING,
  );
  return { id, cmd, client };
}

/** SubscribeToTask on HTTP+JSON, kept open. */
async function subscribe(taskId: string, token = 'demo-acme'): Promise<RawSse> {
  const s = await openRawSse(`${env.url}/a2a/capped/tasks/${taskId}:subscribe`, { headers: headers(token) });
  open.push(s);
  return s;
}

/** SubscribeToTask on JSON-RPC, kept open. */
async function subscribeRpc(taskId: string, token = 'demo-acme', path = ''): Promise<RawSse> {
  const s = await openRawSse(`${env.url}/a2a/capped${path}`, {
    method: 'POST',
    headers: { ...headers(token), 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id: taskId } }),
  });
  open.push(s);
  return s;
}

type RestError = { error: { code: number; status: string; message: string; details: Array<{ reason: string }> } };
type RpcError = { id: number; error: { code: number; message: string; data: Array<{ reason: string; metadata: Record<string, string> }> } };

test('the stream over the cap is refused with 429 on both bindings; other tenants are not affected; a closed stream frees its slot', async () => {
  const a = await workingTask();
  const streams = [await subscribe(a.id), await subscribeRpc(a.id), await subscribe(a.id)];
  for (const s of streams) assert.equal(s.status, 200);

  const rest = await subscribe(a.id);
  assert.equal(rest.status, 429);
  await rest.ended;
  assert.equal(rest.headers['retry-after'], '2');
  const restBody = JSON.parse(rest.body()) as RestError;
  assert.equal(restBody.error.status, 'RESOURCE_EXHAUSTED');
  assert.equal(restBody.error.details[0].reason, 'TOO_MANY_STREAMS');
  assert.match(restBody.error.message, /3 streams open/);

  const rpc = await subscribeRpc(a.id);
  assert.equal(rpc.status, 429);
  await rpc.ended;
  const rpcBody = JSON.parse(rpc.body()) as RpcError;
  assert.equal(rpcBody.id, 7);
  assert.equal(rpcBody.error.code, -32029);
  assert.equal(rpcBody.error.data[0].reason, 'TOO_MANY_STREAMS');
  assert.equal(rpcBody.error.data[0].metadata.retryAfterSeconds, '2');
  // express serves `/a2a/capped/` and `/a2a/capped//` as JSON-RPC too: capped alike.
  for (const path of ['/', '//']) {
    const odd = await subscribeRpc(a.id, 'demo-acme', path);
    assert.equal(odd.status, 429, `JSON-RPC at /a2a/capped${path} → ${odd.status}`);
    await odd.ended;
    assert.equal((JSON.parse(odd.body()) as RpcError).error.code, -32029);
  }

  // Spelled otherwise, the route is not served at all: the cap cannot be passed that way.
  for (const path of [`tasks/${a.id}:SUBSCRIBE`, `tasks/${a.id}:subscribe/`, `TASKS/${a.id}:subscribe`, `v1/tasks/${a.id}:Subscribe`]) {
    const odd = await openRawSse(`${env.url}/a2a/capped/${path}`, { headers: headers('demo-acme') });
    open.push(odd);
    assert.equal(odd.status, 404, `${path} → ${odd.status}`);
    await odd.ended;
  }

  // The official client gets the refusal as an error, and a refused SendStreamingMessage starts nothing.
  const before = (await a.client.getTask({ tenant: '', id: a.id, historyLength: 0 })).id;
  assert.equal(before, a.id);
  const sdk = await streamingClient(env.url, 'capped', 'JSONRPC');
  await assert.rejects(async () => {
    for await (const _ of sdk.sendMessageStream(sendRequest(userMessage('refused stream')))) void _;
  });
  const listed = await a.client.listTasks(listRequest());
  assert.equal(listed.totalSize, 1, 'the refused SendStreamingMessage created no task');

  // Another tenant streams as usual.
  const g = await workingTask('demo-globex');
  const globex = await subscribe(g.id, 'demo-globex');
  assert.equal(globex.status, 200);
  globex.close();

  // The caller closes one stream: its slot comes back.
  streams[1].close();
  const again = await eventually('a slot after a close', async () => {
    const s = await subscribe(a.id);
    if (s.status === 200) return s;
    await s.ended;
    return undefined;
  });
  assert.equal(again.status, 200);
  for (const s of [...streams, again]) s.close();
});

test('slots come back when streams end because their task settled or with an error', async () => {
  for (const s of open.splice(0)) s.close();
  // Settled: three streams of a task that completes end by themselves.
  const b = await workingTask();
  const first = await eventually('slots free after the previous test', async () => {
    const s = await subscribe(b.id);
    return s.status === 200 ? s : (await s.ended, undefined);
  });
  const settling = [first, await subscribe(b.id), await subscribe(b.id)];
  for (const s of settling) assert.equal(s.status, 200);
  await worker.emit(b.cmd, [
    { seq: 1, artifact: 'done' },
    { seq: 2, state: 'COMPLETED' },
  ]);
  await Promise.all(settling.map((s) => s.ended));
  for (const s of settling) assert.match(s.body(), /TASK_STATE_COMPLETED/);

  // Errors: unknown task and terminal task, each holding and then releasing a slot.
  for (let i = 0; i < CAP + 1; i++) {
    const unknown = await subscribe(`no-such-task-${i}`);
    assert.equal(unknown.status, 404);
    await unknown.ended;
  }
  const terminal = await subscribe(b.id);
  assert.equal(terminal.status, 400);
  await terminal.ended;

  // Every slot is free again: the cap's worth of streams is accepted.
  const c = await workingTask();
  const full = await eventually('all slots free', async () => {
    const batch = [await subscribe(c.id), await subscribe(c.id), await subscribe(c.id)];
    if (batch.every((s) => s.status === 200)) return batch;
    batch.forEach((s) => s.close());
    return undefined;
  });
  assert.equal(full.length, CAP);
  full.forEach((s) => s.close());
});
