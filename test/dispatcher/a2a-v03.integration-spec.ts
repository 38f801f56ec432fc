import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { Transport } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport, LegacyRestTransport, parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { eventually } from '../support/infra.js';
import {
  a2aClient,
  agentRecord,
  BINDINGS,
  publishAgents,
  rawRequest,
  startTestDispatcher,
  type Binding,
} from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';

const env = await startTestDispatcher('a2a-v03', {}, { PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8' });
await publishAgents(env.kafka, env.topics, [agentRecord('echo')]);
const worker = await startEchoWorker(env.kafka, env.topics, 'echo');
after(() => worker.stop());
await eventually('echo served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);

const base = `${env.url}/a2a/echo`;
const auth = { authorization: 'Bearer demo-acme' };

/**
 * The SDK's 0.3 client transport: it speaks 0.3 on the wire and sends no A2A-Version. Its fetch
 * adds the token and does not buffer, so a stream is read as it arrives.
 */
function client03(binding: Binding, token = 'demo-acme'): Transport {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  return binding === 'JSONRPC'
    ? new LegacyJsonRpcTransport({ endpoint: base, fetchImpl })
    : new LegacyRestTransport({ endpoint: base, fetchImpl });
}

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

const lastState = (events: StreamResponse[]) => {
  const last = events.at(-1)?.payload;
  if (last?.$case === 'statusUpdate') return last.value.status?.state;
  return last?.$case === 'task' ? last.value.status?.state : undefined;
};

test('the 0.3 card is served when A2A-Version asks for it; without the header the 1.0 card is', async () => {
  const legacy = await fetch(`${base}/.well-known/agent-card.json`, { headers: { 'a2a-version': '0.3' } });
  assert.equal(legacy.status, 200);
  const raw = (await legacy.json()) as Record<string, unknown>;
  assert.equal(raw.url, base);
  assert.equal(raw.preferredTransport, 'JSONRPC');
  assert.equal(raw.protocolVersion, '0.3');
  assert.deepEqual(raw.additionalInterfaces, [{ url: base, transport: 'HTTP+JSON' }]);
  assert.equal(parseLegacyAgentCard(raw).name, 'Agent echo');
  // The query parameter stands in for the header (a 0.3 client cannot send one).
  const byQuery = (await (await fetch(`${base}/.well-known/agent-card.json?A2A-Version=0.3`)).json()) as Record<string, unknown>;
  assert.equal(byQuery.protocolVersion, '0.3');
  const modern = await fetch(`${base}/.well-known/agent-card.json`);
  const card = (await modern.json()) as { url?: unknown; supportedInterfaces: Array<{ protocolBinding: string; protocolVersion: string }> };
  assert.equal(card.url, undefined);
  assert.deepEqual(
    card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`),
    ['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3'],
  );
  assert.match(modern.headers.get('vary') ?? '', /A2A-Version/i);
});

for (const binding of BINDINGS) {
  test(`0.3 ${binding}: blocking and non-blocking send, get`, async () => {
    const client = client03(binding);
    const done = (await client.sendMessage(sendRequest(userMessage('hello 0.3')))) as Task;
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(artifactText(done), 'echo: hello 0.3');
    const accepted = (await client.sendMessage(sendRequest(userMessage('later'), { returnImmediately: true }))) as Task;
    assert.ok(accepted.id);
    await eventually(
      'completed',
      async () =>
        (await client.getTask({ tenant: '', id: accepted.id, historyLength: 0 })).status?.state === TaskState.TASK_STATE_COMPLETED,
    );
    const got = await client.getTask({ tenant: '', id: accepted.id, historyLength: 0 });
    assert.equal(artifactText(got), 'echo: later');
  });

  test(`0.3 ${binding}: stream to completion`, async () => {
    const client = client03(binding);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('streamed'))));
    assert.equal(events[0]?.payload?.$case, 'task');
    assert.equal(lastState(events), TaskState.TASK_STATE_COMPLETED);
    // A task that settled before the stream began arrives as one task snapshot with its artifacts.
    const artifacts = new Map<string, string>();
    for (const e of events) {
      const found =
        e.payload?.$case === 'artifactUpdate' ? [e.payload.value.artifact!] : e.payload?.$case === 'task' ? e.payload.value.artifacts : [];
      for (const a of found) artifacts.set(a.artifactId, a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(''));
    }
    assert.deepEqual([...artifacts.values()], ['echo: streamed']);
  });

  test(`0.3 ${binding}: resubscribe follows a task until it is canceled; cancel is idempotent`, async () => {
    const client = client03(binding);
    const task = (await client.sendMessage(sendRequest(userMessage('silent'), { returnImmediately: true }))) as Task;
    const events: StreamResponse[] = [];
    const following = (async () => {
      for await (const e of client.resubscribeTask({ tenant: '', id: task.id })) events.push(e);
    })();
    await eventually('resubscribed', () => events.length > 0);
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    await following;
    assert.equal(lastState(events), TaskState.TASK_STATE_CANCELED);
    await eventually('cancel command produced', () =>
      worker.commands.some((c) => c.kind === 'task.cancel' && c.identity.taskId === task.id),
    );
    assert.equal((await client.cancelTask({ tenant: '', id: task.id, metadata: undefined })).status?.state, TaskState.TASK_STATE_CANCELED);
  });

  test(`0.3 ${binding}: a retried messageId returns the same task and runs once`, async () => {
    const client = client03(binding);
    const message = userMessage('retried');
    const a = (await client.sendMessage(sendRequest(message))) as Task;
    const b = (await client.sendMessage(sendRequest(message))) as Task;
    assert.equal(b.id, a.id);
    assert.equal(worker.commands.filter((c) => c.identity.messageId === message.messageId).length, 1);
  });

  test(`0.3 ${binding}: another tenant's task answers like an unknown id`, async () => {
    const acme = client03(binding);
    const task = (await acme.sendMessage(sendRequest(userMessage('mine')))) as Task;
    const globex = client03(binding, 'demo-globex');
    await assert.rejects(globex.getTask({ tenant: '', id: task.id, historyLength: 0 }), TaskNotFoundError);
    await assert.rejects(globex.cancelTask({ tenant: '', id: task.id, metadata: undefined }), TaskNotFoundError);
    await assert.rejects(globex.getTask({ tenant: '', id: randomUUID(), historyLength: 0 }), TaskNotFoundError);
  });

  test(`0.3 ${binding}: push configs are set, read, listed and deleted`, async () => {
    const client = client03(binding);
    const task = (await client.sendMessage(sendRequest(userMessage('silent'), { returnImmediately: true }))) as Task;
    const cfg = {
      tenant: '',
      id: 'hook-1',
      taskId: task.id,
      url: 'http://127.0.0.1:9/a2a-hook',
      token: 'tok',
      authentication: undefined,
    };
    const created = await client.createTaskPushNotificationConfig(cfg);
    assert.equal(created.url, cfg.url);
    const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' });
    assert.equal(got.url, cfg.url);
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    assert.deepEqual(
      listed.configs.map((c) => c.id),
      ['hook-1'],
    );
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' });
    const after = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    assert.deepEqual(after.configs, []);
    await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  });
}

test('push: a webhook a 0.3 caller set gets 0.3-shaped events; one a 1.0 caller set gets StreamResponses', async () => {
  const received: Array<{ hook: string; contentType: string; body: Record<string, unknown> }> = [];
  const receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      received.push({
        hook: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: JSON.parse(raw) as Record<string, unknown>,
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  after(() => new Promise<void>((r) => receiver.close(() => r())));
  const hook = (name: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/${name}`;

  const legacy = client03('JSONRPC');
  const t03 = (await legacy.sendMessage(
    sendRequest(userMessage('push me, 0.3'), {
      returnImmediately: false,
      taskPushNotificationConfig: { tenant: '', id: 'h03', taskId: '', url: hook('v03'), token: 't03', authentication: undefined },
    }),
  )) as Task;
  assert.equal(t03.status?.state, TaskState.TASK_STATE_COMPLETED);
  const modern = await a2aClient(env.url, 'echo', 'JSONRPC');
  // The config goes with the message: one created after the accept could come after the echo
  // worker's COMPLETED, and a config gets only the events after it.
  await modern.sendMessage(
    sendRequest(userMessage('push me, 1.0'), {
      returnImmediately: true,
      taskPushNotificationConfig: { tenant: '', id: 'h10', taskId: '', url: hook('v10'), token: 't10', authentication: undefined },
    }),
  );

  const last = (name: string) => received.filter((r) => r.hook === `/${name}`).at(-1);
  await eventually('the 0.3 webhook got the final status', async () => JSON.stringify(last('v03')?.body ?? {}).includes('completed'));
  await eventually('the 1.0 webhook got the final status', async () =>
    JSON.stringify(last('v10')?.body ?? {}).includes('TASK_STATE_COMPLETED'),
  );
  const v03 = received.filter((r) => r.hook === '/v03');
  assert.ok(
    v03.every((r) => typeof r.body.kind === 'string' && r.body.payload === undefined && r.body.statusUpdate === undefined),
    JSON.stringify(v03),
  );
  const final03 = v03.find((r) => r.body.kind === 'status-update' && (r.body.status as { state?: string }).state === 'completed');
  assert.ok(final03, `a 0.3 status-update COMPLETED: ${JSON.stringify(v03.map((r) => r.body))}`);
  assert.equal(final03.body.taskId, t03.id);
  const v10 = received.filter((r) => r.hook === '/v10');
  assert.ok(
    v10.every((r) => r.body.kind === undefined && (r.body.statusUpdate !== undefined || r.body.artifactUpdate !== undefined)),
    JSON.stringify(v10),
  );
});

test('0.3 deadlines: A2A-Deadline-Ms and metadata deadlineUnixMs travel with the command', async () => {
  const at = Date.now() + 60_000;
  const message = {
    kind: 'message',
    messageId: randomUUID(),
    role: 'user',
    parts: [{ kind: 'text', text: 'd' }],
    metadata: { deadlineUnixMs: at },
  };
  const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message, configuration: { blocking: false } } });
  assert.equal(r.body.error, undefined);
  await eventually('command', () => worker.commands.some((c) => c.identity.messageId === message.messageId));
  assert.equal(worker.commands.find((c) => c.identity.messageId === message.messageId)!.identity.deadlineUnixMs, at);
  const before = Date.now();
  const body = { message: { messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 'd2' }] }, configuration: { blocking: false } };
  const s = await rawRequest(`${base}/v1/message:send`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'a2a-deadline-ms': '5000' },
    body: JSON.stringify(body),
  });
  assert.equal(s.status, 201, s.body);
  await eventually('command', () => worker.commands.some((c) => c.identity.messageId === body.message.messageId));
  const d = worker.commands.find((c) => c.identity.messageId === body.message.messageId)!.identity.deadlineUnixMs!;
  assert.ok(d >= before + 5000 && d <= Date.now() + 5000, String(d));
});

async function rpc(body: unknown, headers: Record<string, string> = {}) {
  const res = await rawRequest(base, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: JSON.parse(res.body) as { id: unknown; result?: unknown; error?: { code: number; message: string } } };
}

test('0.3 JSON-RPC: bad params are -32602 naming the field', async () => {
  const good = () => ({ kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'x' }] });
  const cases: Array<[string, unknown, RegExp]> = [
    ['message/send', { message: { ...good(), parts: [{ text: 'no kind' }] } }, /^params\.message\.parts\[0\]\.kind: /],
    [
      'message/send',
      { message: { ...good(), parts: [{ kind: 'file', file: { name: 'a' } }] } },
      /^params\.message\.parts\[0\]\.file: must have exactly one of uri or bytes/,
    ],
    ['message/send', { message: { ...good(), role: 'agent' } }, /^params\.message\.role: must be "user"/],
    ['message/send', { message: { ...good(), messageId: '' } }, /^params\.message\.messageId: must not be empty/],
    ['message/send', { message: { ...good(), parts: [] } }, /^params\.message\.parts: must not be empty/],
    ['message/stream', { message: good(), configuration: { blocking: 'yes' } }, /^params\.configuration\.blocking: /],
    ['message/send', { message: { ...good(), metadata: { deadlineUnixMs: -1 } } }, /^params\.message\.metadata\.deadlineUnixMs: /],
    [
      'message/send',
      { message: good(), configuration: { pushNotificationConfig: { url: 'ftp://x' } } },
      /^params\.configuration\.pushNotificationConfig\.url: /,
    ],
    ['message/send', { message: good(), Message: 1 }, /^params: unknown field "Message" \(A2A 0\.3 JSON/],
    ['tasks/get', {}, /^params\.id: is required/],
    ['tasks/get', { id: 'x', historyLength: -1 }, /^params\.historyLength: /],
    ['tasks/cancel', { id: 5 }, /^params\.id: /],
    ['tasks/resubscribe', [], /^params: must be a JSON object/],
    ['tasks/pushNotificationConfig/set', { taskId: 'x', pushNotificationConfig: {} }, /^params\.pushNotificationConfig\.url: is required/],
    ['tasks/pushNotificationConfig/delete', { id: 'x' }, /^params\.pushNotificationConfigId: is required/],
  ];
  for (const [method, params, expected] of cases) {
    const r = await rpc({ jsonrpc: '2.0', id: 3, method, params });
    assert.equal(r.status, 200, `${method} ${JSON.stringify(params)}`);
    assert.equal(r.body.error?.code, -32602, `${method} ${JSON.stringify(params)}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.error?.message ?? '', expected);
  }
  const header = await rpc({ jsonrpc: '2.0', id: 4, method: 'message/send', params: { message: good() } }, { 'a2a-deadline-ms': 'soon' });
  assert.equal(header.body.error?.code, -32602);
  assert.match(header.body.error?.message ?? '', /^A2A-Deadline-Ms: /);
  // A 0.3 method the compat layer does not have; a 1.0-only method without A2A-Version is served as 1.0.
  assert.equal((await rpc({ jsonrpc: '2.0', id: 5, method: 'tasks/list', params: {} })).body.error?.code, -32601);
  const v1 = await rpc({ jsonrpc: '2.0', id: 6, method: 'SendMessage', params: {} });
  assert.equal(v1.body.error?.code, -32602);
  assert.match(v1.body.error?.message ?? '', /^params\.message: /);
  // The same 0.3 method with A2A-Version: 1.0 is no 1.0 method.
  assert.equal(
    (await rpc({ jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { id: 'x' } }, { 'a2a-version': '1.0' })).body.error?.code,
    -32601,
  );
});

test('0.3 HTTP+JSON: a push config created without `name` is set on the task of the path', async () => {
  const headers = { ...auth, 'content-type': 'application/json' };
  const sent = await rawRequest(`${base}/v1/message:send`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: { messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 'hook me' }] } }),
  });
  assert.equal(sent.status, 201, sent.body);
  const answer = JSON.parse(sent.body) as { task?: { id: string }; id?: string };
  const taskId = answer.task?.id ?? answer.id;
  assert.ok(taskId, sent.body);
  const made = await rawRequest(`${base}/v1/tasks/${taskId}/pushNotificationConfigs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ pushNotificationConfig: { id: 'no-name', url: 'http://127.0.0.1:9/h' } }),
  });
  assert.equal(made.status, 201, made.body);
  const listed = await rawRequest(`${base}/v1/tasks/${taskId}/pushNotificationConfigs`, { headers });
  assert.match(listed.body, /no-name/);
});

test('0.3 HTTP+JSON: bad bodies and paths are 400 naming the field', async () => {
  const rest = async (method: string, path: string, body?: unknown) => {
    const res = await rawRequest(`${base}${path}`, {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: JSON.parse(res.body) as { code?: number; message?: string } };
  };
  const msg = () => ({ messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 'x' }] });
  const cases: Array<[string, string, unknown, RegExp]> = [
    ['POST', '/v1/message:send', { message: { ...msg(), content: [{}] } }, /^message\.content\[0\]: must have exactly one content field/],
    ['POST', '/v1/message:send', { message: { ...msg(), role: 'ROLE_AGENT' } }, /^message\.role: must be "ROLE_USER"/],
    ['POST', '/v1/message:send', { message: { ...msg(), parts: [{ text: 'x' }] } }, /^message: unknown field "parts"/],
    ['POST', '/v1/message:stream', {}, /^message: is required/],
    ['POST', '/v1/message:send', [1], /^body: must be a JSON object/],
    ['POST', '/v1/tasks/x/pushNotificationConfigs', { pushNotificationConfig: { url: 'nope' } }, /^pushNotificationConfig\.url: /],
    [
      'POST',
      '/v1/tasks/x/pushNotificationConfigs',
      { name: 'tasks/y', pushNotificationConfig: { url: 'http://127.0.0.1:9/h' } },
      /^name: must name the task of the path \(tasks\/x\)/,
    ],
    ['GET', '/v1/tasks/x?historyLength=-2', undefined, /^historyLength: /],
    ['GET', `/v1/tasks/${'a'.repeat(300)}`, undefined, /^taskId: must be at most 256 characters/],
  ];
  for (const [method, path, body, expected] of cases) {
    const r = await rest(method, path, body);
    assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, -32602);
    assert.match(r.body.message ?? '', expected);
  }
  // A 1.0-only route without A2A-Version is served as 1.0: an unknown task there is 404.
  const v1 = await rawRequest(`${base}/tasks/x`, { headers: auth });
  assert.equal(v1.status, 404);
  assert.match(v1.body, /TASK_NOT_FOUND|Task not found/);
});
