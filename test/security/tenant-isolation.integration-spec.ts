import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { InMemoryCardStream } from '@mesh/app-directory';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';
import { eventually } from '../support/infra.js';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';

// Tenant isolation matrix: globex against acme's agents (directory) and acme's tasks (every A2A
// operation, both bindings). Another tenant's non-public object must be indistinguishable from
// one that does not exist: same status, same body apart from the id.

// --- Directory -------------------------------------------------------------------------------

const { dir } = await startTestDirectory('sec-tenancy', {}, { cardStream: new InMemoryCardStream() });
const call = async (key: string, method: string, path: string, body?: unknown) => {
  const r = await rawRequest(`${dir.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: r.body ? (JSON.parse(r.body) as Record<string, unknown>) : {} };
};
for (const [id, visibility] of [
  ['iso-private', 'private'],
  ['iso-tenant', 'tenant'],
  ['iso-public', 'public'],
] as const) {
  assert.equal((await call(KEYS.acme, 'POST', '/v1/agents', { id, visibility, card: card(`Iso ${id}`) })).status, 201);
}

/** Every directory route on one id, as a (method, path, body) list. */
const routes = (id: string) =>
  [
    ['GET', `/v1/agents/${id}`],
    ['PUT', `/v1/agents/${id}`, { card: card('Hijacked') }],
    ['DELETE', `/v1/agents/${id}`],
    ['GET', `/v1/agents/${id}/versions`],
    ['GET', `/v1/agents/${id}/versions/1`],
    ['GET', `/v1/agents/${id}/card`],
    ['POST', `/v1/agents/${id}/heartbeat`, {}],
  ] as const;
const withoutId = (b: Record<string, unknown>, id: string) => JSON.stringify(b).replaceAll(id, '<id>');

// All setup happens before the first test(): node:test may run the root `after` hooks (which drop
// the databases) as soon as the tests declared so far have finished.
// --- Dispatcher ------------------------------------------------------------------------------

const disp = await startTestDispatcher('sec-tenancy');
await publishAgents(disp.kafka, disp.topics, [agentRecord('echo', { visibility: 'public' })]);
const worker = await startEchoWorker(disp.kafka, disp.topics, 'echo');
after(() => worker.stop());
await eventually('echo served', async () => (await fetch(`${disp.url}/a2a/echo/.well-known/agent-card.json`)).ok);
const base = `${disp.url}/a2a/echo`;
const hdr = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json', 'a2a-version': '1.0' });
const rpc = async (key: string, method: string, params: unknown) =>
  JSON.parse(
    (await rawRequest(base, { method: 'POST', headers: hdr(key), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })).body,
  ) as {
    result?: Record<string, unknown>;
    error?: { code: number; message: string };
  };
const rest = async (key: string, method: string, path: string, body?: unknown) => {
  const r = await rawRequest(`${base}${path}`, { method, headers: hdr(key), body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: r.body };
};

const waiting = await rpc(KEYS.acme, 'SendMessage', { message: jsonMessage('need-input for isolation') });
// SendMessage answers `{ task }` (A2A 1.0 SendMessageResponse).
const created = (waiting.result as { task?: { id: string; contextId: string } } | undefined)?.task;
assert.ok(created?.id, JSON.stringify(waiting));
const acmeTask = created.id;
const acmeContext = created.contextId;

test("directory: another tenant's private and tenant agents look exactly like unknown ids on every route", async () => {
  for (const id of ['iso-private', 'iso-tenant']) {
    for (const [method, path, body] of routes(id)) {
      const theirs = await call(KEYS.globex, method, path, body);
      const unknownId = `iso-none-${id.length}`;
      const none = await call(KEYS.globex, method, path.replace(id, unknownId), body);
      assert.equal(theirs.status, 404, `${method} ${path}: ${JSON.stringify(theirs.body)}`);
      assert.equal(withoutId(theirs.body, id), withoutId(none.body, unknownId), `${method} ${path}: same body as an unknown id`);
    }
  }
  const search = await call(KEYS.globex, 'GET', '/v1/agents?q=Iso&visibility=private');
  const ids = (search.body.items as Array<{ id: string }> | undefined)?.map((a) => a.id) ?? [];
  assert.ok(!ids.includes('iso-private') && !ids.includes('iso-tenant'), `search leaks nothing: ${ids.join(',')}`);
});

test("directory: another tenant's public agent is readable but never writable", async () => {
  assert.equal((await call(KEYS.globex, 'GET', '/v1/agents/iso-public')).status, 200);
  assert.equal((await call(KEYS.globex, 'PUT', '/v1/agents/iso-public', { card: card('Hijacked') })).status, 403);
  assert.equal((await call(KEYS.globex, 'DELETE', '/v1/agents/iso-public')).status, 403);
  const own = await call(KEYS.acme, 'GET', '/v1/agents/iso-public');
  assert.equal(own.body.version, 1, 'unchanged');
  assert.equal(own.body.retired, false);
  for (const id of ['iso-private', 'iso-tenant'])
    assert.equal((await call(KEYS.acme, 'GET', `/v1/agents/${id}`)).body.version, 1, `${id} unchanged`);
});

test("A2A (JSON-RPC): every task operation on another tenant's task is TaskNotFound, like an unknown id", async () => {
  const ops: Array<[string, (id: string) => unknown]> = [
    ['GetTask', (id) => ({ id })],
    ['CancelTask', (id) => ({ id })],
    ['SubscribeToTask', (id) => ({ id })],
    ['SendMessage', (id) => ({ message: jsonMessage('follow-up', { taskId: id }) })],
    ['CreateTaskPushNotificationConfig', (id) => ({ taskId: id, pushNotificationConfig: { id: 'x', url: 'https://hooks.example.com/' } })],
    ['GetTaskPushNotificationConfig', (id) => ({ taskId: id, id: 'x' })],
    ['ListTaskPushNotificationConfigs', (id) => ({ taskId: id })],
    ['DeleteTaskPushNotificationConfig', (id) => ({ taskId: id, id: 'x' })],
  ];
  for (const [method, params] of ops) {
    const theirs = await rpc(KEYS.globex, method, params(acmeTask));
    const none = await rpc(KEYS.globex, method, params(randomUUID()));
    assert.ok(theirs.error, `${method}: refused (${JSON.stringify(theirs.result)})`);
    assert.equal(theirs.error.code, none.error?.code, `${method}: same code as an unknown task`);
    assert.equal(
      theirs.error.message.replace(acmeTask, '<id>'),
      none.error?.message.replace(/[0-9a-f-]{36}/, '<id>'),
      `${method}: same message`,
    );
  }
  const list = await rpc(KEYS.globex, 'ListTasks', { contextId: acmeContext });
  assert.deepEqual((list.result as { tasks?: unknown[] }).tasks, [], 'listing by their context shows nothing');
  // And the task is untouched for its owner.
  const own = await rpc(KEYS.acme, 'GetTask', { id: acmeTask });
  assert.equal((own.result as { status: { state: string } }).status.state, 'TASK_STATE_INPUT_REQUIRED');
});

test("A2A (HTTP+JSON): every task route on another tenant's task is 404 like an unknown id", async () => {
  for (const [method, path, body] of [
    ['GET', (id: string) => `/tasks/${id}`, undefined],
    ['POST', (id: string) => `/tasks/${id}:cancel`, {}],
    ['GET', (id: string) => `/tasks/${id}/pushNotificationConfigs`, undefined],
    ['GET', (id: string) => `/tasks/${id}/pushNotificationConfigs/x`, undefined],
    ['DELETE', (id: string) => `/tasks/${id}/pushNotificationConfigs/x`, undefined],
    [
      'POST',
      (id: string) => `/tasks/${id}/pushNotificationConfigs`,
      { pushNotificationConfig: { id: 'x', url: 'https://hooks.example.com/' } },
    ],
  ] as const) {
    const theirs = await rest(KEYS.globex, method, path(acmeTask), body);
    const unknown = randomUUID();
    const none = await rest(KEYS.globex, method, path(unknown), body);
    assert.equal(theirs.status, none.status, `${method} ${path('<id>')}: same status (${theirs.body})`);
    assert.ok(theirs.status >= 400 && theirs.status < 500, `${method} ${path('<id>')}: refused`);
    assert.equal(theirs.body.replaceAll(acmeTask, '<id>'), none.body.replaceAll(unknown, '<id>'), `${method} ${path('<id>')}: same body`);
  }
  const own = await rpc(KEYS.acme, 'GetTask', { id: acmeTask });
  assert.equal((own.result as { status: { state: string } }).status.state, 'TASK_STATE_INPUT_REQUIRED', 'not cancelled by globex');
});
