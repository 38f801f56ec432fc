import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';

const env = await startTestDispatcher('protocol-errors', {}, { DISPATCHER_BODY_LIMIT: '4kb' });
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

test('an unsupported or missing A2A-Version is VersionNotSupported on both bindings (0.3 compat is off), and not logged as an error', async () => {
  // The SDK's JSON-RPC handler logs each of these with a stack trace: one log flood per 0.3 client.
  const logged: unknown[][] = [];
  const consoleError = console.error;
  console.error = (...args: unknown[]) => void logged.push(args);
  after(() => void (console.error = consoleError));
  for (const version of ['2.0', '0.3', undefined]) {
    const headers: Record<string, string> = { ...auth, 'content-type': 'application/json', ...(version ? { 'a2a-version': version } : {}) };
    const r = await rpc({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: 'x' } }, headers);
    assert.equal(r.status, 200);
    assert.equal(r.body.id, 7);
    assert.equal(r.body.error?.code, -32009);
    assert.deepEqual(r.body.error?.data?.[0], errorInfo('VERSION_NOT_SUPPORTED'));
    const s = await rest('GET', '/tasks/x', undefined, headers);
    assert.equal(s.status, 400);
    assert.equal(s.body.error?.status, 'FAILED_PRECONDITION');
    assert.deepEqual(s.body.error?.details[0], errorInfo('VERSION_NOT_SUPPORTED'));
    assert.match(r.body.error?.message ?? '', new RegExp(`version '${version ?? '0.3'}' is not supported\\. Supported versions: 1\\.0`));
  }
  console.error = consoleError;
  assert.deepEqual(
    logged.map((args) => String(args[0])),
    [],
    'nothing logged as an error',
  );
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

test('wrong content type: ContentTypeNotSupported on both bindings', async () => {
  const r = await rpc('hello', { ...v1, 'content-type': 'text/plain' });
  assert.equal(r.body.error?.code, -32005);
  assert.deepEqual(r.body.error?.data?.[0], errorInfo('CONTENT_TYPE_NOT_SUPPORTED'));
  const s = await rest('POST', '/message:send', 'hello', { ...v1, 'content-type': 'text/plain' });
  assert.equal(s.status, 400);
  assert.deepEqual(s.body.error?.details[0], errorInfo('CONTENT_TYPE_NOT_SUPPORTED'));
});

test('an oversized body is refused with 413 in the binding format, and the server keeps serving', async () => {
  const big = jsonMessage('x'.repeat(8 * 1024));
  const r = await rpc({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: { message: big } });
  assert.equal(r.status, 413);
  assert.equal(r.body.error?.code, -32600);
  const s = await rest('POST', '/message:send', { message: big });
  assert.equal(s.status, 413);
  assert.ok(s.body.error?.message.includes('4kb'));
  const s2 = await rest('POST', '/message:send', { message: big }, { ...v1, 'content-type': 'application/a2a+json' });
  assert.equal(s2.status, 413);
  const ok = await rpc({ jsonrpc: '2.0', id: 4, method: 'GetTask', params: { id: 'x' } });
  assert.equal(ok.body.error?.code, -32001);
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
  assert.equal((JSON.parse(r.body) as { id: number }).id, 9);
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
