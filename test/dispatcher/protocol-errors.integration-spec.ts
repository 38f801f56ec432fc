import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { eventually, sql } from '../support/infra.js';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { pushBody } from '../support/raw-http.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';

const env = await startTestDispatcher('protocol-errors', {}, { DISPATCHER_BODY_LIMIT: '64kb' });
await publishAgents(env.kafka, env.topics, [agentRecord('echo'), agentRecord('gone', { retired: true })]);
const worker = await startEchoWorker(env.kafka, env.topics, 'echo');
after(() => worker.stop());
await eventually('echo served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);

const base = `${env.url}/a2a/echo`;
const auth = { authorization: 'Bearer demo-acme' };
const v1 = { ...auth, 'a2a-version': '1.0' };

async function rpc(body: unknown, headers: Record<string, string> = { ...v1, 'content-type': 'application/json' }, url = base) {
  const res = await rawRequest(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return {
    status: res.status,
    body: JSON.parse(res.body) as {
      id: unknown;
      error?: { code: number; message: string; data?: Array<Record<string, unknown>> };
      result?: unknown;
    },
  };
}

async function rest(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { ...v1, 'content-type': 'application/json' },
) {
  const res = await rawRequest(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    status: res.status,
    body: JSON.parse(res.body) as { error?: { code: number; status: string; message: string; details: Array<Record<string, unknown>> } },
  };
}

const errorInfo = (reason: string) => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' });

test('A2A-Version: 1.0, a 1.0 patch and the query parameter are accepted', async () => {
  for (const [headers, url] of [
    [{ ...auth, 'a2a-version': '1.0', 'content-type': 'application/json' }, base],
    [{ ...auth, 'a2a-version': '1.0.1', 'content-type': 'application/json' }, base],
    [{ ...auth, 'content-type': 'application/json' }, `${base}?A2A-Version=1.0`],
  ] as const) {
    const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: randomUUID() } }, { ...headers }, url);
    assert.equal(r.body.error?.code, -32001, `reached the handler (TaskNotFound) with ${JSON.stringify(headers)} ${url}`);
  }
});

test('an unsupported A2A-Version, or a 1.0 method or route asked for as A2A-Version 0.3, is VersionNotSupported on both bindings, and not logged as an error', async () => {
  // The SDK's JSON-RPC handler logs each of these with a stack trace: one log flood per 0.3 client.
  const logged: unknown[][] = [];
  const consoleError = console.error;
  console.error = (...args: unknown[]) => void logged.push(args);
  after(() => void (console.error = consoleError));
  for (const version of ['2.0', '0.3']) {
    const headers: Record<string, string> = { ...auth, 'content-type': 'application/json', 'a2a-version': version };
    const r = await rpc({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: 'x' } }, headers);
    assert.equal(r.status, 200);
    assert.equal(r.body.id, 7);
    assert.equal(r.body.error?.code, -32009);
    assert.deepEqual(r.body.error?.data?.[0], errorInfo('VERSION_NOT_SUPPORTED'));
    const s = await rest('GET', '/tasks/x', undefined, headers);
    assert.equal(s.status, 400);
    assert.equal(s.body.error?.status, 'FAILED_PRECONDITION');
    assert.deepEqual(s.body.error?.details[0], errorInfo('VERSION_NOT_SUPPORTED'));
    if (version === '2.0') {
      assert.match(r.body.error?.message ?? '', /version '2\.0' is not supported\. Supported versions: 1\.0, 0\.3/);
    } else {
      // 0.3 said is served, but only its own methods and /v1 routes.
      assert.match(r.body.error?.message ?? '', /method "GetTask" is A2A 1\.0: send A2A-Version: 1\.0 \(A2A-Version 0\.3 is A2A 0\.3/);
      assert.match(
        s.body.error?.message ?? '',
        /GET \/tasks\/x is no A2A 0\.3 route \(those are under \/v1\): the A2A 1\.0 routes need A2A-Version: 1\.0/,
      );
    }
  }
  console.error = consoleError;
  assert.deepEqual(
    logged.map((args) => String(args[0])),
    [],
    'nothing logged as an error',
  );
});

test('without A2A-Version, a method or route only A2A 1.0 has is served as 1.0 on both bindings (0.3 ones stay 0.3)', async () => {
  const noVersion = { ...auth, 'content-type': 'application/json' };
  const message = (text: string) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });
  const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('rpc, no header') } }, noVersion);
  const task = (r.body.result as { task?: { id: string; status: { state: string } } } | undefined)?.task;
  assert.equal(task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(r.body));
  const s = await rest('POST', '/message:send', { message: message('rest, no header') }, noVersion);
  assert.equal(s.status, 200, JSON.stringify(s.body));
  assert.equal((s.body as { task?: { status: { state: string } } }).task?.status.state, 'TASK_STATE_COMPLETED');
  // Reads too: GetTask by JSON-RPC, GET /tasks/{id} by HTTP+JSON, in the 1.0 shape.
  const got = await rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: task!.id } }, noVersion);
  assert.equal((got.body.result as { id?: string } | undefined)?.id, task!.id);
  const read = await rest('GET', `/tasks/${task!.id}`, undefined, noVersion);
  assert.equal((read.body as { status?: { state: string } }).status?.state, 'TASK_STATE_COMPLETED');
  // A 0.3 method without the header is still 0.3 (its own result shape: `kind`).
  const legacy = await rpc({ jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { id: task!.id } }, noVersion);
  assert.equal((legacy.body.result as { kind?: string } | undefined)?.kind, 'task', JSON.stringify(legacy.body));
});

test('proto field names (message_id, return_immediately, ...) are taken as their JSON names on both bindings, as ProtoJSON parsers do', async () => {
  const snake = (text: string) => ({
    message: {
      message_id: randomUUID(),
      context_id: `ctx-${randomUUID()}`,
      role: 'ROLE_USER',
      parts: [{ text, media_type: 'text/plain' }],
      metadata: { kept_as_is: true },
    },
    configuration: { return_immediately: true, accepted_output_modes: ['text/plain'] },
  });
  const s = await rest('POST', '/message:send', snake('rest, proto names'));
  assert.equal(s.status, 200, JSON.stringify(s.body));
  const task = (s.body as { task?: { id: string; contextId: string; history: Array<{ metadata?: unknown }> } }).task!;
  assert.match(task.contextId, /^ctx-/);
  assert.deepEqual(task.history[0]?.metadata, { kept_as_is: true }, 'metadata keys are data: never renamed');
  const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: snake('rpc, proto names') });
  assert.match((r.body.result as { task?: { contextId: string } } | undefined)?.task?.contextId ?? '', /^ctx-/, JSON.stringify(r.body));
  const got = await rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: task.id, history_length: 0 } });
  assert.deepEqual((got.body.result as { history?: unknown[] } | undefined)?.history ?? [], []);
});

test('TaskNotFound: -32001 and HTTP 404 with ErrorInfo', async () => {
  const r = await rpc({ jsonrpc: '2.0', id: 'a', method: 'GetTask', params: { id: randomUUID() } });
  assert.equal(r.body.error?.code, -32001);
  assert.deepEqual(r.body.error?.data?.[0], errorInfo('TASK_NOT_FOUND'));
  const s = await rest('GET', `/tasks/${randomUUID()}`);
  assert.equal(s.status, 404);
  assert.equal(s.body.error?.status, 'NOT_FOUND');
  assert.deepEqual(s.body.error?.details[0], errorInfo('TASK_NOT_FOUND'));
});

test('malformed JSON: -32700 on JSON-RPC, 400 INVALID_ARGUMENT on HTTP+JSON', async () => {
  const r = await rpc('{"jsonrpc": "2.0", "id": 1, "method": ');
  assert.equal(r.status, 200);
  assert.equal(r.body.error?.code, -32700);
  const s = await rest('POST', '/message:send', '{"message": {');
  assert.equal(s.status, 400);
  assert.equal(s.body.error?.status, 'INVALID_ARGUMENT');
  const a2aJson = await rest('POST', '/message:send', '{"message": {', { ...v1, 'content-type': 'application/a2a+json' });
  assert.equal(a2aJson.status, 400);
});

test('JSON-RPC envelope errors: -32600 invalid request, -32601 unknown method, -32602 invalid params', async () => {
  assert.equal((await rpc({ id: 1, method: 'GetTask', params: {} })).body.error?.code, -32600);
  assert.equal((await rpc([{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: {} }])).body.error?.code, -32600);
  assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'NoSuchMethod', params: {} })).body.error?.code, -32601);
  assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: 'x' })).body.error?.code, -32602);
  assert.equal(
    (await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } } })).body
      .error?.code,
    -32602,
  );
});

test('a JSON-RPC notification (no id) gets no reply and starts no work: 204, no body, no task', async () => {
  const contextId = randomUUID();
  const sends = [
    [
      v1,
      {
        jsonrpc: '2.0',
        method: 'SendMessage',
        params: { message: { messageId: randomUUID(), contextId, role: 'ROLE_USER', parts: [{ text: 'x' }] } },
      },
    ],
    [
      v1,
      {
        jsonrpc: '2.0',
        method: 'SendStreamingMessage',
        params: { message: { messageId: randomUUID(), contextId, role: 'ROLE_USER', parts: [{ text: 'x' }] } },
      },
    ],
    [
      auth,
      {
        jsonrpc: '2.0',
        method: 'message/send',
        params: { message: { kind: 'message', messageId: randomUUID(), contextId, role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
      },
    ],
    [v1, { jsonrpc: '2.0', method: 'GetTask', params: { id: randomUUID() } }],
  ] as const;
  for (const [headers, body] of sends) {
    const res = await rawRequest(base, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 204, body.method);
    assert.equal(res.body, '', body.method);
  }
  const [tasks] = await sql<{ n: number }>(env.databaseUrl, 'SELECT count(*)::int AS n FROM dispatcher.tasks WHERE context_id = $1', [
    contextId,
  ]);
  assert.equal(tasks.n, 0, 'no task was created');
  // `"id": null` is a request (JSON-RPC discourages it, but it is no notification): it is answered.
  const answered = await rpc({ jsonrpc: '2.0', id: null, method: 'GetTask', params: { id: randomUUID() } });
  assert.equal(answered.body.id, null);
  assert.equal(answered.body.error?.code, -32001);
});

test('JSON-RPC ids: an integer beyond 2^53-1 is refused naming id (never echoed rounded); the largest safe one and strings are echoed exactly', async () => {
  const getTask = (id: string) => `{"jsonrpc":"2.0","id":${id},"method":"GetTask","params":{"id":"${randomUUID()}"}}`;
  for (const id of ['12345678901234567890', '9007199254740993', '-9007199254740993', '1e300']) {
    const r = await rpc(getTask(id));
    assert.equal(r.body.id, null, id);
    assert.equal(r.body.error?.code, -32600, id);
    assert.match(r.body.error?.message ?? '', /\bid\b/, id);
  }
  for (const id of ['9007199254740991', '-9007199254740991', '"12345678901234567890"']) {
    const res = await rawRequest(base, { method: 'POST', headers: { ...v1, 'content-type': 'application/json' }, body: getTask(id) });
    assert.match(res.body, new RegExp(`"id":${id}[,}]`), `echoed as sent: ${res.body}`);
  }
});

test('wrong content type: ContentTypeNotSupported on both bindings', async () => {
  const r = await rpc('hello', { ...v1, 'content-type': 'text/plain' });
  assert.equal(r.body.error?.code, -32005);
  assert.deepEqual(r.body.error?.data?.[0], errorInfo('CONTENT_TYPE_NOT_SUPPORTED'));
  const s = await rest('POST', '/message:send', 'hello', { ...v1, 'content-type': 'text/plain' });
  assert.equal(s.status, 400);
  assert.deepEqual(s.body.error?.details[0], errorInfo('CONTENT_TYPE_NOT_SUPPORTED'));
});

test('an oversized body is refused with 413 in the binding format, and the server keeps serving', async () => {
  const big = jsonMessage('x'.repeat(80 * 1024));
  const r = await rpc({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: { message: big } });
  assert.equal(r.status, 413);
  assert.equal(r.body.error?.code, -32600);
  const s = await rest('POST', '/message:send', { message: big });
  assert.equal(s.status, 413);
  assert.ok(s.body.error?.message.includes('64kb'));
  const s2 = await rest('POST', '/message:send', { message: big }, { ...v1, 'content-type': 'application/a2a+json' });
  assert.equal(s2.status, 413);
  const ok = await rpc({ jsonrpc: '2.0', id: 4, method: 'GetTask', params: { id: 'x' } });
  assert.equal(ok.body.error?.code, -32001);
});

test('a body over the limit is refused as it arrives, in the binding format, and never read to its end', async () => {
  const MiB = 1024 * 1024;
  // Declared over the limit (as large as a length gets): 413 before a byte is read.
  for (const contentLength of [64 * 1024 + 1, 2 ** 53 + 1]) {
    const r = await pushBody(env.url, '/a2a/echo/message:send', { ...v1 }, { contentLength });
    assert.equal(r.status, 413, `${contentLength}: ${r.answer.slice(0, 200)}`);
    assert.match(r.answer, /connection: close/i);
    assert.match(r.answer, /request body exceeds the limit of 64kb/);
    assert.ok(r.closedByServer && r.bodyBytesSent < 8 * MiB, `closed after ${r.bodyBytesSent} bytes`);
  }
  // Chunked (no length to refuse up front), JSON-RPC: refused as it passes the limit.
  const rpcChunked = await pushBody(env.url, '/a2a/echo', { ...v1 }, { chunked: true });
  assert.equal(rpcChunked.status, 413, rpcChunked.answer.slice(0, 200));
  assert.match(rpcChunked.answer, /"code":-32600/);
  assert.ok(rpcChunked.closedByServer && rpcChunked.bodyBytesSent < 8 * MiB, `closed after ${rpcChunked.bodyBytesSent} bytes`);
  // Routes that read no body, without a credential: answered, and the connection closed, not read on.
  for (const path of ['/healthz', '/a2a/echo/.well-known/agent-card.json', '/no-such-route']) {
    const r = await pushBody(env.url, path, {});
    assert.ok(r.status >= 400 && r.status < 500, `${path}: ${r.answer.slice(0, 200)}`);
    assert.ok(r.closedByServer && r.bodyBytesSent < 8 * MiB, `${path}: closed after ${r.bodyBytesSent} bytes`);
  }
  const ok = await rpc({ jsonrpc: '2.0', id: 4, method: 'GetTask', params: { id: 'x' } });
  assert.equal(ok.body.error?.code, -32001, 'the server keeps serving');
});

test('Expect: 100-continue is answered only once the caller is authenticated and its body within the limit', async () => {
  const expect = { ...v1, expect: '100-continue' };
  const held = { maxBytes: 0, waitMs: 1500 };
  const invited = await pushBody(env.url, '/a2a/echo/message:send', expect, { ...held, contentLength: 100 });
  assert.match(invited.answer, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, invited.answer.slice(0, 200));
  const stranger = await pushBody(
    env.url,
    '/a2a/echo/message:send',
    { ...expect, authorization: 'Bearer nobody' },
    { ...held, contentLength: 100 },
  );
  assert.equal(stranger.status, 401, stranger.answer.slice(0, 200));
  assert.doesNotMatch(stranger.answer, /100 Continue/);
  const oversized = await pushBody(env.url, '/a2a/echo/message:send', expect, { ...held, contentLength: 2 ** 40 });
  assert.equal(oversized.status, 413, oversized.answer.slice(0, 200));
  assert.doesNotMatch(oversized.answer, /100 Continue/);
  // An unknown agent or a misspelled route is refused before the body is charged or invited
  // (HTTP+JSON; a JSON-RPC answer needs the request's id, so its body is read first).
  // A path of no route at all is refused alike: the routers behind would answer 404 without it.
  for (const path of [
    '/a2a/nobody/message:send',
    '/a2a/echo/MESSAGE:SEND',
    '/a2a/echo/tasks/x:SUBSCRIBE/',
    '/a2a/echo/message:sendx',
    '/a2a/echo/tasks/x:bogus',
    '/a2a/echo/nothing',
  ]) {
    const r = await pushBody(env.url, path, expect, { ...held, contentLength: 100 });
    assert.equal(r.status, 404, `${path}: ${r.answer.slice(0, 200)}`);
    assert.doesNotMatch(r.answer, /100 Continue/, path);
  }
});

test('unknown, retired and unrouted: 404 in the binding format', async () => {
  for (const agent of ['nobody', 'gone', 'Bad_Id']) {
    const r = await rpc({ jsonrpc: '2.0', id: 5, method: 'GetTask', params: { id: 'x' } }, undefined, `${env.url}/a2a/${agent}`);
    assert.equal(r.status, 404);
    assert.equal(r.body.id, 5);
    assert.match(r.body.error?.message ?? '', /not found/);
    const card = await rawRequest(`${env.url}/a2a/${agent}/.well-known/agent-card.json`);
    assert.equal(card.status, 404);
    assert.equal((JSON.parse(card.body) as { error: { status: string } }).error.status, 'NOT_FOUND');
  }
  const s = await rest('GET', '/no/such/route');
  assert.equal(s.status, 404);
});

test('no or a bad token: 401 with WWW-Authenticate, in the binding format', async () => {
  const r = await rawRequest(base, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: 'x' } }),
  });
  assert.equal(r.status, 401);
  assert.equal(r.headers['www-authenticate'], 'Bearer');
  // Answered before the body is read (a caller without a credential makes nothing buffer it): id null.
  assert.equal((JSON.parse(r.body) as { id: number | null }).id, null);
  const s = await rest('GET', '/tasks/x', undefined, { 'a2a-version': '1.0', authorization: 'Bearer not-a-key' });
  assert.equal(s.status, 401);
  assert.equal(s.body.error?.status, 'UNAUTHENTICATED');
});

test("a tenant field that is not the caller's tenant is refused", async () => {
  const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { tenant: 'globex', message: jsonMessage('hi') } });
  assert.equal(r.body.error?.code, -32602);
  const s = await rest('POST', '/globex/message:send', { message: jsonMessage('hi') });
  assert.equal(s.status, 400);
  const same = await rest('POST', '/acme/message:send', { message: jsonMessage('hi'), configuration: { returnImmediately: true } });
  assert.equal(same.status, 200);
});

test('a push config for an unknown task is TaskNotFound', async () => {
  const p = await rpc({
    jsonrpc: '2.0',
    id: 1,
    method: 'CreateTaskPushNotificationConfig',
    params: { taskId: 'x', url: 'http://example.invalid/hook' },
  });
  assert.equal(p.body.error?.code, -32001);
});

// Validation at the edge (A2A 1.0 shapes): each refusal is -32602 / HTTP 400 naming the field, and
// nothing is stored for it.

/** Rows a refused request must not add: tasks, dedup entries, executions (turns), push configs. */
async function stored(): Promise<string> {
  const [r] = await sql<Record<string, number>>(
    env.databaseUrl,
    `SELECT (SELECT count(*) FROM dispatcher.tasks)::int AS tasks, (SELECT count(*) FROM dispatcher.message_dedup)::int AS dedup,
            (SELECT count(*) FROM dispatcher.executions)::int AS turns, (SELECT count(*) FROM dispatcher.push_configs)::int AS push`,
  );
  return JSON.stringify(r);
}

/** Headers are named as they are; params fields with the `params` prefix. */
const rpcField = (field: string) => (/^(A2A-|x-)/.test(field) ? field : field ? `params.${field}` : 'params');

/** A JSON body; `"<DEEP>"` stands for 10,000-deep nesting (beyond JSON.stringify's stack). */
const DEEP = '<DEEP>';
const bodyOf = (v: unknown) => JSON.stringify(v).replaceAll(JSON.stringify(DEEP), `${'['.repeat(10000)}"leaf"${']'.repeat(10000)}`);

/** JSON-RPC: -32602 whose message names `params.<field>`. */
async function rpcRefused(method: string, params: unknown, field: string, headers?: Record<string, string>) {
  const r = await rpc(bodyOf({ jsonrpc: '2.0', id: 1, method, params }), { ...v1, 'content-type': 'application/json', ...headers });
  assert.equal(r.status, 200, `${method} ${field}`);
  assert.equal(r.body.error?.code, -32602, `${method} ${field}: ${JSON.stringify(r.body).slice(0, 300)}`);
  const name = rpcField(field);
  // The cursor is checked when decoded, where the params prefix is not known.
  const named = r.body.error?.message.startsWith(name) || (field === 'pageToken' && r.body.error?.message.startsWith(field));
  assert.ok(named, `names ${name}: ${r.body.error?.message}`);
}

/** HTTP+JSON: 400 INVALID_ARGUMENT whose message names `<field>`. */
async function restRefused(method: string, path: string, body: unknown, field: string, headers?: Record<string, string>) {
  const s = await rest(method, path, body === undefined ? undefined : bodyOf(body), {
    ...v1,
    'content-type': 'application/json',
    ...headers,
  });
  assert.equal(s.status, 400, `${method} ${path} ${field}: ${JSON.stringify(s.body).slice(0, 300)}`);
  assert.equal(s.body.error?.status, 'INVALID_ARGUMENT');
  assert.ok(s.body.error?.message.startsWith(field), `names ${field}: ${s.body.error?.message}`);
}

/** SendMessage with one message field replaced, refused on both bindings. */
async function sendRefused(patch: Record<string, unknown>, field: string, headers?: Record<string, string>) {
  const message = { ...jsonMessage('hi'), ...patch };
  for (const k of Object.keys(patch)) if (patch[k] === undefined) delete (message as Record<string, unknown>)[k];
  const params = { message, configuration: { returnImmediately: true } };
  await rpcRefused('SendMessage', params, field, headers);
  await rpcRefused('SendStreamingMessage', params, field, headers);
  await restRefused('POST', '/message:send', params, field, headers);
  await restRefused('POST', '/message:stream', params, field, headers);
}

const NUL = 'a\u0000b';
const LONE = 'a\ud800b';
const LONG = 'x'.repeat(3000);

test('a caller sends ROLE_USER only: UNRECOGNIZED, ROLE_UNSPECIFIED, none, 42 and ROLE_AGENT are refused on both bindings', async () => {
  const before = await stored();
  for (const role of ['UNRECOGNIZED', 'ROLE_UNSPECIFIED', undefined, 42, 'ROLE_AGENT', 2, 'role_user', null]) {
    await sendRefused({ role }, 'message.role');
  }
  assert.equal(await stored(), before, 'nothing stored');
});

test('each part has exactly one content of the right type; a data part may hold any JSON value', async () => {
  const before = await stored();
  for (const [parts, field] of [
    [[null], 'message.parts[0]'],
    [[{}], 'message.parts[0]'],
    [[{ text: null }], 'message.parts[0].text'],
    [[1, 2], 'message.parts[0]'],
    [[], 'message.parts'],
    [null, 'message.parts'],
    [[{ text: 'a', data: {} }], 'message.parts[0]'],
    [[{ text: 5 }], 'message.parts[0].text'],
    [[{ raw: 'not base64!' }], 'message.parts[0].raw'],
    [[{ data: null }], 'message.parts[0].data'],
    [[{ text: 'ok' }, { text: 'x', kind: 'text' }], 'message.parts[1]'],
  ] as const) {
    await sendRefused({ parts }, field);
  }
  assert.equal(await stored(), before, 'nothing stored');
  for (const data of ['a string', 42, [1, 'two'], { nested: { ok: true } }, false]) {
    const params = { message: jsonMessage('x', { parts: [{ data }] }), configuration: { returnImmediately: true } };
    const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params });
    assert.ok(r.body.result, `data ${JSON.stringify(data)} accepted: ${JSON.stringify(r.body.error)}`);
    const s = await rest('POST', '/message:send', { ...params, message: jsonMessage('x', { parts: [{ data }] }) });
    assert.equal(s.status, 200, `data ${JSON.stringify(data)} accepted over HTTP+JSON`);
  }
});

test('ids: NUL, control characters, lone surrogates, 3,000 characters and empty ids are refused wherever an id goes', async () => {
  const before = await stored();
  for (const bad of [NUL, LONE, LONG, '', 'a\u0085b', 'tab\there']) {
    await sendRefused({ messageId: bad }, 'message.messageId');
    await sendRefused({ contextId: bad }, 'message.contextId');
    await sendRefused({ taskId: bad }, 'message.taskId');
    await sendRefused({ referenceTaskIds: ['ok', bad] }, 'message.referenceTaskIds[1]');
    await rpcRefused('GetTask', { id: bad }, 'id');
    await rpcRefused('CancelTask', { id: bad }, 'id');
    await rpcRefused('SubscribeToTask', { id: bad }, 'id');
    await rpcRefused('ListTasks', { contextId: bad }, 'contextId');
    await rpcRefused('GetTaskPushNotificationConfig', { taskId: bad, id: 'c' }, 'taskId');
    await rpcRefused('DeleteTaskPushNotificationConfig', { taskId: 't', id: bad }, 'id');
    await rpcRefused('ListTaskPushNotificationConfigs', { taskId: bad }, 'taskId');
    await rpcRefused('CreateTaskPushNotificationConfig', { taskId: 't', id: bad, url: 'http://example.invalid/h' }, 'id');
    // An empty path segment is another route; a lone surrogate has no URL encoding (below).
    if (bad === '' || bad === LONE) continue;
    const enc = encodeURIComponent(bad);
    await restRefused('GET', `/tasks/${enc}`, undefined, 'taskId');
    await restRefused('POST', `/tasks/${enc}:cancel`, undefined, 'taskId');
    await restRefused('GET', `/tasks/${enc}:subscribe`, undefined, 'taskId');
    await restRefused('GET', `/tasks/t/pushNotificationConfigs/${enc}`, undefined, 'configId');
    await restRefused('DELETE', `/tasks/t/pushNotificationConfigs/${enc}`, undefined, 'configId');
    await restRefused('POST', `/tasks/${enc}/pushNotificationConfigs`, { url: 'http://example.invalid/h' }, 'taskId');
    await restRefused('POST', `/tasks/t/pushNotificationConfigs`, { id: bad, url: 'http://example.invalid/h' }, 'id');
    await restRefused('GET', `/tasks?contextId=${enc}`, undefined, 'contextId');
    await restRefused('GET', `/${enc}/tasks`, undefined, 'tenant');
  }
  // The UTF-8 bytes of a surrogate are not UTF-8: the path does not decode, 400 before any route.
  for (const path of ['/tasks/a%ED%A0%80b', '/tasks/t/pushNotificationConfigs/%ED%A0%80']) {
    const s = await rest('GET', path);
    assert.equal(s.status, 400, `${path}: ${JSON.stringify(s.body)}`);
  }
  assert.equal(await stored(), before, 'nothing stored');
});

test('strings are well-formed Unicode without NUL: text, metadata keys and values, push URLs', async () => {
  const before = await stored();
  for (const bad of [NUL, LONE, '\udfff']) {
    await sendRefused({ parts: [{ text: bad }] }, 'message.parts[0].text');
    await sendRefused({ metadata: { [bad]: 1 } }, 'message.metadata');
    await sendRefused({ metadata: { k: [bad] } }, 'message.metadata.k[0]');
    await rpcRefused('SendMessage', { message: jsonMessage('x'), metadata: { a: bad } }, 'metadata.a');
    await rpcRefused('CreateTaskPushNotificationConfig', { taskId: 't', url: `http://example.invalid/${bad}` }, 'url');
  }
  // Unknown fields are refused by name; a field under its proto name and its JSON name is given twice.
  await sendRefused({ message_id: 'm' }, 'message.messageId');
  await sendRefused({ colour: 'blue' }, 'message');
  await rpcRefused('GetTask', { id: 't', extra: 1 }, '');
  assert.equal(await stored(), before, 'nothing stored');
});

test('metadata is bounded: 10,000-deep nesting and more than 64 KiB are refused', async () => {
  const before = await stored();
  const deep = DEEP;
  await sendRefused({ metadata: { deep } }, 'message.metadata');
  await sendRefused({ parts: [{ data: deep }] }, 'message.parts[0].data');
  await rpcRefused('CancelTask', { id: 't', metadata: { deep } }, 'metadata');
  // Over 64 KiB needs a bigger body than this dispatcher takes: the check itself is in the fuzz suite's range.
  assert.equal(await stored(), before, 'nothing stored');
});

test('deadlines: deadlineUnixMs 2^53-1, 1e15, negative or fractional, and A2A-Deadline-Ms 9999999999 are refused', async () => {
  const before = await stored();
  for (const d of [2 ** 53 - 1, 1e15, -5, 0, 1.5, '12x', Date.now() + 31 * 86_400_000]) {
    await sendRefused({ metadata: { deadlineUnixMs: d } }, 'message.metadata.deadlineUnixMs');
  }
  for (const h of ['9999999999', '-1', '1.5', 'soon', '1000, 2000']) {
    await sendRefused({}, 'A2A-Deadline-Ms', { 'a2a-deadline-ms': h });
    await sendRefused({}, 'x-request-timeout-ms', { 'x-request-timeout-ms': h });
  }
  assert.equal(await stored(), before, 'nothing stored');
  // Within the bound: accepted.
  const ok = await rest('POST', '/message:send', {
    message: jsonMessage('x', { metadata: { deadlineUnixMs: Date.now() + 60_000 } }),
    configuration: { returnImmediately: true },
  });
  assert.equal(ok.status, 200);
});

test('ListTasks: a pageToken decoding to ["1","x"], bad page sizes and timestamps are refused on both bindings', async () => {
  const token = Buffer.from(JSON.stringify(['1', 'x'])).toString('base64url');
  const feb30 = Buffer.from(JSON.stringify(['2025-02-30T00:00:00.000000Z', 'x'])).toString('base64url');
  for (const t of [token, feb30, 'not base64 !']) {
    await rpcRefused('ListTasks', { pageToken: t }, 'pageToken');
    await restRefused('GET', `/tasks?pageToken=${encodeURIComponent(t)}`, undefined, 'pageToken');
  }
  for (const [q, field] of [
    ['pageSize=0', 'pageSize'],
    ['pageSize=101', 'pageSize'],
    ['pageSize=1e3', 'pageSize'],
    ['historyLength=-1', 'historyLength'],
    ['status=TASK_STATE_BOGUS', 'status'],
    ['statusTimestampAfter=yesterday', 'statusTimestampAfter'],
    ['includeArtifacts=yes', 'includeArtifacts'],
    ['pageSize=5&pageSize=6', 'pageSize'],
  ] as const) {
    await restRefused('GET', `/tasks?${q}`, undefined, field);
  }
  for (const [params, field] of [
    [{ pageSize: 0 }, 'pageSize'],
    [{ pageSize: 2 ** 53 }, 'pageSize'],
    [{ historyLength: -1 }, 'historyLength'],
    [{ historyLength: 1e308 }, 'historyLength'],
    [{ statusTimestampAfter: 'x' }, 'statusTimestampAfter'],
    [{ status: 'UNRECOGNIZED' }, 'status'],
  ] as const) {
    await rpcRefused('ListTasks', params, field);
  }
  await restRefused('GET', `/tasks/x?historyLength=abc`, undefined, 'historyLength');
  const ok = await rest('GET', '/tasks?pageSize=2&includeArtifacts=true&status=TASK_STATE_COMPLETED');
  assert.equal(ok.status, 200);
});

test('a body that does not decode under its Content-Encoding (br, gzip, deflate) is a client error, never a 500', async () => {
  const garbage = Buffer.from('this is not compressed at all');
  for (const encoding of ['br', 'gzip', 'deflate']) {
    const h = { ...v1, 'content-type': 'application/json', 'content-encoding': encoding };
    const r = await rawRequest(base, { method: 'POST', headers: h, body: garbage });
    assert.equal(r.status, 200, encoding);
    assert.equal((JSON.parse(r.body) as { error: { code: number } }).error.code, -32700, encoding);
    const s = await rawRequest(`${base}/message:send`, { method: 'POST', headers: h, body: garbage });
    assert.equal(s.status, 400, `${encoding}: ${s.body}`);
    assert.equal((JSON.parse(s.body) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
  }
  const unknown = await rawRequest(`${base}/message:send`, {
    method: 'POST',
    headers: { ...v1, 'content-type': 'application/json', 'content-encoding': 'x-foo' },
    body: garbage,
  });
  assert.ok(unknown.status === 400 || unknown.status === 415, String(unknown.status));
  // A body that does decode is read as usual.
  const zipped = gzipSync(JSON.stringify({ message: jsonMessage('zipped'), configuration: { returnImmediately: true } }));
  const ok = await rawRequest(`${base}/message:send`, {
    method: 'POST',
    headers: { ...v1, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: zipped,
  });
  assert.equal(ok.status, 200, ok.body);
});

// Found probing from outside: each was answered 2xx, a misleading error or not in the binding's format.

test('a push token, scheme or credentials that cannot travel as an HTTP header is refused, not stored to fail every delivery', async () => {
  const before = await stored();
  const url = 'http://example.invalid/hook';
  for (const [cfg, field] of [
    [{ token: 'a\r\nX-Injected: 1' }, 'token'],
    [{ token: 'tab\there' }, 'token'],
    [{ token: '€' }, 'token'],
    [{ authentication: { scheme: 'Bearer\r\nX: y', credentials: 'c' } }, 'authentication.scheme'],
    [{ authentication: { scheme: 'Two words', credentials: 'c' } }, 'authentication.scheme'],
    [{ authentication: { scheme: 'Bearer', credentials: 'c\u0085' } }, 'authentication.credentials'],
  ] as const) {
    await rpcRefused('CreateTaskPushNotificationConfig', { taskId: 't', url, ...cfg }, field);
    await restRefused('POST', '/tasks/t/pushNotificationConfigs', { url, ...cfg }, field);
    const params = { message: jsonMessage('x'), configuration: { returnImmediately: true, taskPushNotificationConfig: { url, ...cfg } } };
    await rpcRefused('SendMessage', params, `configuration.taskPushNotificationConfig.${field}`);
    await restRefused('POST', '/message:send', params, `configuration.taskPushNotificationConfig.${field}`);
  }
  assert.equal(await stored(), before, 'nothing stored');
});

test('statusTimestampAfter must be a real date: February 31st and February 29th of 2025 are refused', async () => {
  for (const t of ['2025-02-31T00:00:00Z', '2025-02-29T00:00:00Z', '2025-04-31T00:00:00Z']) {
    await rpcRefused('ListTasks', { statusTimestampAfter: t }, 'statusTimestampAfter');
    await restRefused('GET', `/tasks?statusTimestampAfter=${t}`, undefined, 'statusTimestampAfter');
  }
  assert.equal((await rest('GET', '/tasks?statusTimestampAfter=2024-02-29T00:00:00Z')).status, 200, 'a leap day is a date');
  // A leap second is RFC 3339 but no google.protobuf.Timestamp: refused with that reason.
  const leap = await rpc({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { statusTimestampAfter: '2016-12-31T23:59:60Z' } });
  assert.equal(leap.body.error?.code, -32602);
  assert.match(leap.body.error?.message ?? '', /^params\.statusTimestampAfter: has no leap second/);
});

test('a path that is not valid percent-encoding is named as such, in the binding format, the agent segment included', async () => {
  const s = await rest('GET', '/tasks/%ff');
  assert.equal(s.status, 400);
  assert.match(s.body.error?.message ?? '', /^path: malformed URL encoding/);
  const r = await rpc({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: 'x' } }, undefined, `${env.url}/a2a/%ff`);
  assert.equal(r.status, 404);
  // No agent, so no caller authenticated for it: the body is not read, the id is null.
  assert.equal(r.body.id, null);
  assert.equal(r.body.error?.code, -32601);
  const card = await rawRequest(`${env.url}/a2a/%ff/.well-known/agent-card.json`);
  assert.equal(card.status, 400);
  assert.equal((JSON.parse(card.body) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
});

test("a tenant in the HTTP+JSON query or body, or in a message's push config, that is not the caller's is refused", async () => {
  const before = await stored();
  const cfg = { url: 'http://example.invalid/hook', tenant: 'globex' };
  await restRefused('GET', '/tasks?tenant=globex', undefined, 'tenant');
  await restRefused('GET', '/tasks/x?tenant=globex', undefined, 'tenant');
  await restRefused('POST', '/message:send', { tenant: 'globex', message: jsonMessage('x') }, 'tenant');
  await restRefused('POST', '/tasks/t/pushNotificationConfigs', cfg, 'tenant');
  const params = { message: jsonMessage('x'), configuration: { returnImmediately: true, taskPushNotificationConfig: cfg } };
  await rpcRefused('SendMessage', params, 'configuration.taskPushNotificationConfig.tenant');
  await restRefused('POST', '/message:send', params, 'configuration.taskPushNotificationConfig.tenant');
  assert.equal(await stored(), before, 'nothing stored');
  assert.equal((await rest('GET', '/tasks?tenant=acme')).status, 200, "the caller's own tenant is fine");
});

test("an empty tenant is proto3's default: every operation takes it as the caller's own", async () => {
  const sent = await rpc({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { tenant: '', message: jsonMessage('empty tenant'), configuration: { returnImmediately: true } },
  });
  const taskId = (sent.body.result as { task?: { id: string } } | undefined)?.task?.id;
  assert.ok(taskId, JSON.stringify(sent.body).slice(0, 300));
  // A public address literal: the egress policy takes it without resolving a name (nothing is delivered here).
  const cfg = { tenant: '', taskId, id: 'cfg-empty-tenant', url: 'http://93.184.215.14/hook' };
  for (const [method, params] of [
    ['GetTask', { tenant: '', id: taskId }],
    ['ListTasks', { tenant: '' }],
    ['CreateTaskPushNotificationConfig', cfg],
    ['GetTaskPushNotificationConfig', { tenant: '', taskId, id: cfg.id }],
    ['ListTaskPushNotificationConfigs', { tenant: '', taskId }],
    ['DeleteTaskPushNotificationConfig', { tenant: '', taskId, id: cfg.id }],
    ['CancelTask', { tenant: '', id: taskId }],
  ] as const) {
    const r = await rpc({ jsonrpc: '2.0', id: 2, method, params });
    // CancelTask may find the task already completed by the echo worker: TaskNotCancelable, not a refusal.
    assert.ok(r.body.result !== undefined || r.body.error?.code === -32002, `${method}: ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  const restSent = await rest('POST', '/message:send', {
    tenant: '',
    message: jsonMessage('empty tenant'),
    configuration: { returnImmediately: true },
  });
  assert.equal(restSent.status, 200);
  assert.equal((await rest('POST', `/tasks/${taskId}/pushNotificationConfigs`, { ...cfg, id: 'cfg-rest' })).status, 201);
});

test('the body of an HTTP+JSON cancel or subscribe is validated like the JSON-RPC params', async () => {
  await restRefused('POST', '/tasks/t:cancel', { zzz: 1 }, 'body');
  await restRefused('POST', '/tasks/t:cancel', { metadata: { a: NUL } }, 'metadata.a');
  await restRefused('POST', '/tasks/t:cancel', { metadata: { deep: DEEP } }, 'metadata');
  await restRefused('POST', '/tasks/t:subscribe', { zzz: 1 }, 'body');
  assert.equal((await rest('POST', '/tasks/t:cancel', { metadata: { why: 'ok' } })).status, 404, 'a valid body reaches the handler');
});

test('JSON-RPC: an empty method is -32601 and a body without a Content-Type is -32005, not a nameless -32602', async () => {
  const r = await rpc({ jsonrpc: '2.0', id: 8, method: '', params: {} });
  assert.equal(r.body.error?.code, -32601);
  assert.equal(r.body.id, 8);
  for (const ct of [undefined, '']) {
    const headers: Record<string, string> = { ...v1, ...(ct === undefined ? {} : { 'content-type': ct }) };
    const n = await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, headers);
    assert.equal(n.body.error?.code, -32005, JSON.stringify(n.body));
    assert.deepEqual(n.body.error?.data?.[0], errorInfo('CONTENT_TYPE_NOT_SUPPORTED'));
  }
});

test('a repeated Authorization header is refused (Node would keep the first; a proxy may have checked another)', async () => {
  // Node's client sends an array as repeated header lines (its types allow one Authorization).
  const headers = { 'a2a-version': '1.0', authorization: ['Bearer demo-globex', 'Bearer demo-acme'] } as unknown as Record<string, string>;
  const s = await rawRequest(`${base}/tasks`, { headers });
  assert.equal(s.status, 401, s.body);
  assert.match(s.body, /exactly one Authorization header/);
  const r = await rawRequest(base, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'x' } }),
  });
  assert.equal(r.status, 401);
  assert.equal((JSON.parse(r.body) as { id: number | null }).id, null);
});

test('deadlines stay below what a timer can wait (2^31-1 ms): 25 days ahead is refused, 23 days accepted', async () => {
  const before = await stored();
  await sendRefused({}, 'A2A-Deadline-Ms', { 'a2a-deadline-ms': String(25 * 86_400_000) });
  await sendRefused({ metadata: { deadlineUnixMs: Date.now() + 25 * 86_400_000 } }, 'message.metadata.deadlineUnixMs');
  assert.equal(await stored(), before, 'nothing stored');
  const ok = await rest(
    'POST',
    '/message:send',
    { message: jsonMessage('x'), configuration: { returnImmediately: true } },
    {
      ...v1,
      'content-type': 'application/json',
      'a2a-deadline-ms': String(23 * 86_400_000),
    },
  );
  assert.equal(ok.status, 200);
});

test('no push config page token is ours, an empty url part is no url, a repeated ?A2A-Version is named as sent', async () => {
  await rpcRefused('ListTaskPushNotificationConfigs', { taskId: 't', pageToken: 'abc' }, 'pageToken');
  await sendRefused({ parts: [{ url: '' }] }, 'message.parts[0].url');
  const s = await rest('GET', '/tasks?A2A-Version=1.0&A2A-Version=1.0', undefined, { ...auth });
  assert.equal(s.status, 400);
  assert.match(s.body.error?.message ?? '', /version '1\.0, 1\.0' is not supported/);
});

test('a body that is not UTF-8 is malformed JSON on every parser, never stored as replacement characters', async () => {
  const before = await stored();
  // `"text":"a<ED A0 80>b"`: the UTF-8 form of a lone surrogate, which no UTF-8 decoder may accept.
  const withBadBytes = (json: string) => {
    const [head, tail] = json.split('BAD');
    return Buffer.concat([Buffer.from(head!), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(tail!)]);
  };
  const message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'aBADb' }] };
  const jsonRpc = await rawRequest(base, {
    method: 'POST',
    headers: { ...v1, 'content-type': 'application/json' },
    body: withBadBytes(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } })),
  });
  assert.equal(jsonRpc.status, 200);
  assert.equal((JSON.parse(jsonRpc.body) as { error?: { code: number } }).error?.code, -32700);
  for (const contentType of ['application/json', 'application/a2a+json']) {
    const r = await rawRequest(`${base}/message:send`, {
      method: 'POST',
      headers: { ...v1, 'content-type': contentType },
      body: withBadBytes(JSON.stringify({ message: { ...message, messageId: randomUUID() } })),
    });
    assert.equal(r.status, 400, `${contentType}: ${r.body}`);
    assert.match(r.body, /INVALID_ARGUMENT/);
  }
  assert.equal(await stored(), before);
});
