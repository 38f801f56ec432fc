import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { OutgoingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';
import {
  anyJson,
  type Answer,
  brokenBody,
  fc,
  mutate,
  printable,
  runs,
  sendRaw,
  sendRawUntilStream,
  heapBackNear,
  settledHeap,
  wrongType,
} from './fuzz-support.js';
import { LEGACY_BODIES, LEGACY_PARAMS } from '@mesh/app-dispatcher';
import {
  bodyText,
  controlStrings,
  DeepJson,
  deepNesting,
  hugeString,
  numericExtremes,
  schemaFields,
  setPath,
  wrongTypeFor,
} from './hostile-values.js';

// Generated hostile requests against both A2A bindings of one dispatcher. Every answer must be
// a documented error in the binding's format (or a success for the rare valid request); never
// a 5xx, never a hang, and the heap must settle back near its baseline afterwards.

const env = await startTestDispatcher(
  'fuzz-dispatcher',
  {},
  // A blocking send or a stream the generator happens to make valid ends soon (the `target` agent has no worker).
  {
    DISPATCHER_BODY_LIMIT: '256kb',
    DISPATCHER_BLOCKING_TIMEOUT_MS: '200',
    DISPATCHER_STREAM_MAX_MS: '2000',
    PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
  },
);
await publishAgents(env.kafka, env.topics, [
  agentRecord('echo'),
  agentRecord('secret', { tenant: 'globex', visibility: 'private' }),
  agentRecord('target', { card: { ...agentRecord('target').card, capabilities: { streaming: true, pushNotifications: true } } }),
]);
// Both agents are served: a valid streaming send (or subscribe) the generator happens to build
// stays open until its task ends, so an agent without a worker would look like a hang.
const workers = [await startEchoWorker(env.kafka, env.topics, 'echo'), await startEchoWorker(env.kafka, env.topics, 'secret')];
after(() => Promise.all(workers.map((w) => w.stop())));
await eventually('echo served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);
await eventually('target served', async () => (await fetch(`${env.url}/a2a/target/.well-known/agent-card.json`)).ok);
const db = new pg.Pool({ connectionString: env.databaseUrl, max: 2 });
db.on('error', () => undefined); // its idle connection ends when the spec drops the database
after(() => db.end());

const send = (path: string, method: string, headers: OutgoingHttpHeaders, body?: Buffer): Promise<Answer> =>
  sendRaw(env.url, path, method, headers, body);

const METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
];
/** JSON-RPC codes the dispatcher documents (docs/dispatcher.md "Errors"); -32603 internal is not one. */
const RPC_CODES = new Set([-32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32005, -32006, -32007, -32009]);

const validSend = () => ({ message: jsonMessage('fuzz'), configuration: { returnImmediately: true } });
const paths = [
  ['message'],
  ['message', 'role'],
  ['message', 'parts'],
  ['message', 'messageId'],
  ['message', 'taskId'],
  ['message', 'contextId'],
  ['configuration'],
  ['configuration', 'historyLength'],
  ['configuration', 'returnImmediately'],
  ['metadata'],
  ['id'],
  ['tenant'],
];

const contentType = fc.constantFrom<string | undefined>(
  'application/json',
  'application/json',
  'application/a2a+json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/plain',
  'multipart/form-data; boundary=x',
  undefined,
);
const version = fc.constantFrom<string | string[] | undefined>(
  '1.0',
  '1.0',
  '1.0.7',
  '2.0',
  '0.3',
  '',
  'one',
  '1',
  ['1.0', '2.0'],
  undefined,
);
const authorization = fc.constantFrom<string | string[] | undefined>(
  'Bearer demo-acme',
  'Bearer demo-acme',
  'Bearer demo-globex',
  'Bearer ',
  'Basic ZGVtbzpkZW1v',
  'Bearer not-a-key',
  'Bearer a.b.c',
  ['Bearer demo-acme', 'Bearer demo-globex'],
  undefined,
);

const params = fc.oneof(
  anyJson,
  fc.tuple(fc.constantFrom(...paths), fc.oneof(wrongType, anyJson)).map(([p, v]) => mutate(validSend(), p, v)),
  fc.record({ id: fc.oneof(fc.uuid(), fc.string({ maxLength: 100 }), wrongType) }),
  fc.record({
    id: fc.uuid(),
    pushNotificationConfig: fc.oneof(wrongType, fc.record({ url: fc.oneof(fc.webUrl(), fc.string()), token: wrongType })),
  }),
);
const envelope = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      id: fc.oneof(fc.integer(), fc.uuid()),
      method: fc.oneof(fc.constantFrom(...METHODS), fc.string({ maxLength: 40 })),
      params,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), wrongType),
        id: fc.oneof(wrongType, fc.uuid()),
        method: fc.oneof(fc.constantFrom(...METHODS), wrongType),
        params,
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: anyJson },
  {
    weight: 1,
    arbitrary: fc.array(fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.constantFrom(...METHODS) }), {
      maxLength: 5,
    }),
  },
);
const body = fc
  .oneof(
    { weight: 5, arbitrary: envelope.map((e) => Buffer.from(JSON.stringify(e) ?? 'null')) },
    { weight: 2, arbitrary: brokenBody },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 65 * 1024, max: 200 * 1024 })
        .map((n) =>
          Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: jsonMessage('x'.repeat(n)) } })),
        ),
    },
  )
  .map(printable);
// (No `..`: clients normalise dot segments, and `/a2a/..` is not under the A2A edge at all.)
const agentPath = fc.constantFrom('echo', 'echo', 'echo', 'secret', 'nobody', 'Bad_Id', '%00', 'echo%2F..');

/** Content encodings (bodies are never really compressed: each one is garbage to its decoder) and repeated deadline headers. */
const extraHeaders = fc.oneof(
  { weight: 4, arbitrary: fc.constant({}) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('br', 'gzip', 'deflate', 'x-foo', 'gzip, br', 'identity').map((e) => ({ 'content-encoding': e })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('a2a-deadline-ms', 'x-request-timeout-ms')
      .chain((name) =>
        fc
          .oneof(fc.constantFrom(['1000', '2000'], '9999999999', '-1', '1e3', '0x10'), fc.string({ maxLength: 20 }))
          .map((v) => ({ [name]: v })),
      ),
  },
);

function headersOf(ct: string | undefined, v: string | string[] | undefined, auth: string | string[] | undefined): OutgoingHttpHeaders {
  const h: OutgoingHttpHeaders = {};
  if (ct !== undefined) h['content-type'] = ct;
  if (v !== undefined) h['a2a-version'] = v;
  if (auth !== undefined) h['authorization'] = auth as string; // node:http sends an array as repeated headers
  return h;
}

/** JSON-RPC answers: documented HTTP status, a JSON-RPC response object, a documented code. */
function checkJsonRpc(a: Answer): void {
  assert.ok(a.status < 500, `no 5xx (got ${a.status}: ${a.body.slice(0, 300)})`);
  if (a.contentType.startsWith('text/event-stream')) return assert.equal(a.status, 200);
  // A notification (a request object without id) is not run and gets no JSON-RPC reply.
  if (a.status === 204) return assert.equal(a.body, '');
  assert.ok([200, 401, 404, 413].includes(a.status), `documented status, got ${a.status}: ${a.body.slice(0, 300)}`);
  const r = JSON.parse(a.body) as { jsonrpc?: string; error?: { code: number; message: string }; result?: unknown };
  assert.equal(r.jsonrpc, '2.0', a.body.slice(0, 300));
  if (r.error) {
    assert.ok(RPC_CODES.has(r.error.code), `documented code, got ${r.error.code}: ${r.error.message}`);
    assert.equal(typeof r.error.message, 'string');
  } else assert.equal(a.status, 200);
}

/** HTTP+JSON answers: no 5xx; errors are google.rpc.Status-shaped JSON. */
function checkRest(a: Answer): void {
  assert.ok(a.status < 500, `no 5xx (got ${a.status}: ${a.body.slice(0, 300)})`);
  if (a.status < 400 || a.contentType.startsWith('text/event-stream')) return;
  let r: { error?: { code?: number; status?: string; message?: string } };
  try {
    r = JSON.parse(a.body) as typeof r;
  } catch {
    return assert.fail(`a JSON error body, got ${a.status} ${a.contentType}: "${a.body.slice(0, 300)}"`);
  }
  assert.equal(typeof r.error?.message, 'string', `error body: ${a.body.slice(0, 300)}`);
  assert.equal(typeof r.error?.status, 'string', `error status: ${a.body.slice(0, 300)}`);
}

// Warm up the edge (per-agent routers, SDK handlers) before the baseline is taken.
for (let i = 0; i < 20; i++) {
  await send(
    '/a2a/echo',
    'POST',
    { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer demo-acme' },
    Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'GetTask', params: { id: randomUUID() } })),
  );
}
const baseline = await settledHeap();

test('found by this suite: an undecodable path and a primitive JSON-RPC body get 4xx / -32600, not a 500', async () => {
  const h = { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer demo-acme' };
  const rest = await send('/a2a/echo/tasks/%ff%fe', 'GET', h);
  assert.equal(rest.status, 400);
  assert.equal((JSON.parse(rest.body) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
  // A JSON primitive as the body (application/a2a+json is parsed non-strict) is Invalid Request.
  for (const primitive of ['""', '5', 'true', 'null']) {
    const a = await send('/a2a/echo', 'POST', { ...h, 'content-type': 'application/a2a+json' }, Buffer.from(primitive));
    assert.equal(a.status, 200, primitive);
    assert.equal((JSON.parse(a.body) as { error: { code: number } }).error.code, -32600, primitive);
  }
  // An undecodable agent id matches no agent: 404 in the JSON-RPC format, like an unknown agent.
  const rpc = await send(
    '/a2a/%ff',
    'POST',
    h,
    Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: 'x' } })),
  );
  assert.equal(rpc.status, 404);
  assert.equal((JSON.parse(rpc.body) as { error: { code: number } }).error.code, -32601);
});

test('JSON-RPC binding: hostile envelopes, params, bodies and headers get documented errors', async () => {
  await fc.assert(
    fc.asyncProperty(agentPath, contentType, version, authorization, extraHeaders, body, async (agent, ct, v, auth, extra, b) => {
      checkJsonRpc(await send(`/a2a/${agent}`, 'POST', { ...headersOf(ct, v, auth), ...extra }, b));
    }),
    { numRuns: runs(2000) },
  );
});

const restRoute = fc.oneof(
  fc.constantFrom('/message:send', '/message:stream', '/tasks', '/extendedAgentCard', '/tasks/', '/message:nope'),
  fc
    .tuple(
      fc.oneof(fc.uuid(), fc.string({ maxLength: 60 }).map(encodeURIComponent), fc.constant('%ff%fe'), fc.constant('..%2F..')),
      fc.constantFrom('', ':cancel', ':subscribe', '/pushNotificationConfigs', '/pushNotificationConfigs/x', ':frobnicate'),
    )
    .map(([id, rest]) => `/tasks/${id}${rest}`),
);
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    '?historyLength=-1',
    '?historyLength=abc',
    '?pageSize=100000',
    '?pageSize=-5',
    '?status=TASK_STATE_BOGUS',
    '?pageToken=%ff',
    '?A2A-Version=9.9',
    '?contextId=',
  ),
);

test('HTTP+JSON binding: hostile routes, methods, bodies and headers get documented errors', async () => {
  await fc.assert(
    fc.asyncProperty(
      agentPath,
      fc.constantFrom('GET', 'POST', 'POST', 'DELETE', 'PUT', 'PATCH'),
      restRoute,
      query,
      contentType,
      version,
      authorization,
      extraHeaders,
      fc.oneof(
        params.map((p) => printable(Buffer.from(JSON.stringify(p) ?? 'null'))),
        brokenBody.map(printable),
        fc.constant(undefined),
      ),
      async (agent, method, route, q, ct, v, auth, extra, b) => {
        const headers = { ...headersOf(ct, v, auth), ...extra };
        checkRest(await send(`/a2a/${agent}${route}${q}`, method, headers, method === 'GET' ? undefined : b));
      },
    ),
    { numRuns: runs(2000) },
  );
});

// ---------------------------------------------------------------------------------------------
// Schema-driven: every field of every A2A operation's request shape, on both bindings, gets each
// hostile value class. Requests go to `target` (no worker: what is stored stays as stored), on a
// task and a push config that exist, so a refusal is the validation's and not "not found".

type Kind =
  | 'id'
  | 'text'
  | 'struct'
  | 'json'
  | 'role'
  | 'parts'
  | 'part'
  | 'int'
  | 'bool'
  | 'url'
  | 'state'
  | 'time'
  | 'token'
  | 'header'
  | 'tenant'
  | 'deadline'
  | 'list'
  | 'object';
type Seg = string | number;
/** One field of a request shape: where it is in the JSON-RPC params, and where the HTTP+JSON binding carries it. */
interface Field {
  path: Seg[];
  kind: Kind;
  /** HTTP+JSON: in the body (same path), the URL path (parameter name) or the query (parameter name); absent = not on REST. */
  rest?: { in: 'body' } | { in: 'path'; name: string } | { in: 'query'; name: string };
}
interface Operation {
  method: string;
  params(): Record<string, unknown>;
  fields: Field[];
  /** The HTTP+JSON request for the params (path values already URL-encoded by the caller). */
  rest(p: Record<string, unknown>, enc: (v: unknown) => string): { method: string; path: string; body?: unknown };
}

const auth = { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer demo-acme' };
const rpcTarget = (method: string, params: unknown) =>
  sendRawUntilStream(env.url, '/a2a/target', 'POST', auth, Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })));
const created = JSON.parse(
  (await rpcTarget('SendMessage', { message: jsonMessage('fuzz target'), configuration: { returnImmediately: true } })).body,
) as { result: { task: { id: string; contextId: string } } };
const T = created.result.task.id;
const pushCreated = await rpcTarget('CreateTaskPushNotificationConfig', { taskId: T, id: 'cfg', url: 'http://127.0.0.1:9/hook' });
assert.match(pushCreated.body, /"result"/, pushCreated.body);

const inBody = (kind: Kind, rest = true) => ({ kind, ...(rest ? { rest: { in: 'body' as const } } : {}) });
const msgFields = (prefix: Seg[]): Field[] => [
  { path: prefix, ...inBody('object') },
  { path: [...prefix, 'messageId'], ...inBody('id') },
  { path: [...prefix, 'contextId'], ...inBody('id') },
  { path: [...prefix, 'taskId'], ...inBody('id') },
  { path: [...prefix, 'role'], ...inBody('role') },
  { path: [...prefix, 'parts'], ...inBody('parts') },
  { path: [...prefix, 'parts', 0], ...inBody('part') },
  { path: [...prefix, 'parts', 0, 'text'], ...inBody('text') },
  { path: [...prefix, 'parts', 0, 'metadata'], ...inBody('struct') },
  { path: [...prefix, 'parts', 0, 'mediaType'], ...inBody('token') },
  { path: [...prefix, 'metadata'], ...inBody('struct') },
  { path: [...prefix, 'metadata', 'deadlineUnixMs'], ...inBody('deadline') },
  { path: [...prefix, 'extensions'], ...inBody('list') },
  { path: [...prefix, 'referenceTaskIds'], ...inBody('list') },
  { path: [...prefix, 'referenceTaskIds', 0], ...inBody('id') },
];
const sendFields: Field[] = [
  ...msgFields(['message']),
  { path: ['message', 'parts', 1], ...inBody('part') },
  { path: ['message', 'parts', 1, 'data'], ...inBody('json') },
  { path: ['configuration'], ...inBody('object') },
  { path: ['configuration', 'historyLength'], ...inBody('int') },
  { path: ['configuration', 'returnImmediately'], ...inBody('bool') },
  { path: ['configuration', 'acceptedOutputModes'], ...inBody('list') },
  { path: ['configuration', 'taskPushNotificationConfig'], ...inBody('object') },
  { path: ['configuration', 'taskPushNotificationConfig', 'url'], ...inBody('url') },
  { path: ['configuration', 'taskPushNotificationConfig', 'id'], ...inBody('id') },
  { path: ['configuration', 'taskPushNotificationConfig', 'token'], ...inBody('header') },
  { path: ['configuration', 'taskPushNotificationConfig', 'authentication', 'scheme'], ...inBody('header') },
  { path: ['configuration', 'taskPushNotificationConfig', 'authentication', 'credentials'], ...inBody('header') },
  { path: ['configuration', 'taskPushNotificationConfig', 'tenant'], ...inBody('tenant') },
  { path: ['metadata'], ...inBody('struct') },
  { path: ['tenant'], ...inBody('tenant') },
];
const sendParams = () => ({
  message: { ...jsonMessage('fuzz'), parts: [{ text: 'fuzz' }, { data: { ok: true } }], referenceTaskIds: [T], metadata: { k: 'v' } },
  configuration: { returnImmediately: true, historyLength: 1, taskPushNotificationConfig: { url: 'http://127.0.0.1:9/hook' } },
});
const OPERATIONS: Operation[] = [
  { method: 'SendMessage', params: sendParams, fields: sendFields, rest: (p) => ({ method: 'POST', path: '/message:send', body: p }) },
  {
    method: 'SendStreamingMessage',
    params: sendParams,
    fields: sendFields,
    rest: (p) => ({ method: 'POST', path: '/message:stream', body: p }),
  },
  {
    method: 'GetTask',
    params: () => ({ id: T, historyLength: 2 }),
    fields: [
      { path: ['id'], kind: 'id', rest: { in: 'path', name: 'taskId' } },
      { path: ['historyLength'], kind: 'int', rest: { in: 'query', name: 'historyLength' } },
    ],
    rest: (p, enc) => ({ method: 'GET', path: `/tasks/${enc(p.id)}${queryString(p, ['historyLength'])}` }),
  },
  {
    method: 'ListTasks',
    params: () => ({ contextId: created.result.task.contextId, pageSize: 5, status: 'TASK_STATE_SUBMITTED', includeArtifacts: true }),
    fields: (
      [
        ['contextId', 'id'],
        ['status', 'state'],
        ['pageSize', 'int'],
        ['pageToken', 'token'],
        ['historyLength', 'int'],
        ['statusTimestampAfter', 'time'],
        ['includeArtifacts', 'bool'],
        ['tenant', 'tenant'],
      ] as const
    ).map(([name, kind]) => ({ path: [name], kind, rest: { in: 'query' as const, name } })),
    rest: (p) => ({
      method: 'GET',
      path: `/tasks${queryString(p, ['contextId', 'status', 'pageSize', 'pageToken', 'historyLength', 'statusTimestampAfter', 'includeArtifacts', 'tenant'])}`,
    }),
  },
  {
    method: 'CancelTask',
    params: () => ({ id: randomUUID(), metadata: { why: 'fuzz' } }),
    fields: [
      { path: ['id'], kind: 'id', rest: { in: 'path', name: 'taskId' } },
      { path: ['metadata'], ...inBody('struct') },
    ],
    rest: (p, enc) => ({ method: 'POST', path: `/tasks/${enc(p.id)}:cancel`, body: { metadata: p.metadata } }),
  },
  {
    method: 'SubscribeToTask',
    params: () => ({ id: T }),
    fields: [{ path: ['id'], kind: 'id', rest: { in: 'path', name: 'taskId' } }],
    rest: (p, enc) => ({ method: 'GET', path: `/tasks/${enc(p.id)}:subscribe` }),
  },
  {
    method: 'CreateTaskPushNotificationConfig',
    params: () => ({
      taskId: T,
      id: 'cfg2',
      url: 'http://127.0.0.1:9/hook2',
      token: 'tok',
      authentication: { scheme: 'Bearer', credentials: 'c' },
    }),
    fields: [
      { path: ['taskId'], kind: 'id', rest: { in: 'path', name: 'taskId' } },
      { path: ['id'], ...inBody('id') },
      { path: ['url'], ...inBody('url') },
      { path: ['token'], ...inBody('header') },
      { path: ['authentication'], ...inBody('object') },
      { path: ['authentication', 'scheme'], ...inBody('header') },
      { path: ['authentication', 'credentials'], ...inBody('header') },
      { path: ['tenant'], ...inBody('tenant') },
    ],
    rest: (p, enc) => {
      const { taskId, ...rest } = p;
      return { method: 'POST', path: `/tasks/${enc(taskId)}/pushNotificationConfigs`, body: rest };
    },
  },
  ...(['GetTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig'] as const).map((method): Operation => ({
    method,
    // Delete names a config that does not exist: a valid delete must not remove `cfg`, which the other cases use.
    params: () => ({ taskId: T, id: method === 'GetTaskPushNotificationConfig' ? 'cfg' : 'nothing' }),
    fields: [
      { path: ['taskId'], kind: 'id', rest: { in: 'path', name: 'taskId' } },
      { path: ['id'], kind: 'id', rest: { in: 'path', name: 'configId' } },
    ],
    rest: (p, enc) => ({
      method: method === 'GetTaskPushNotificationConfig' ? 'GET' : 'DELETE',
      path: `/tasks/${enc(p.taskId)}/pushNotificationConfigs/${enc(p.id)}`,
    }),
  })),
  {
    method: 'ListTaskPushNotificationConfigs',
    params: () => ({ taskId: T, pageSize: 10 }),
    fields: [
      { path: ['taskId'], kind: 'id', rest: { in: 'path', name: 'taskId' } },
      { path: ['pageSize'], kind: 'int' },
      { path: ['pageToken'], kind: 'token' },
    ],
    rest: (p, enc) => ({ method: 'GET', path: `/tasks/${enc(p.taskId)}/pushNotificationConfigs` }),
  },
];

/** `?a=1&b=2` of the given params; an array value repeats the parameter. */
function queryString(p: Record<string, unknown>, names: string[]): string {
  const parts: string[] = [];
  for (const n of names) {
    const v = p[n];
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v])
      parts.push(`${n}=${encodeURIComponent(typeof one === 'string' ? one : JSON.stringify(one))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** A value standing for 10,000-deep nesting, spliced into the JSON text (JSON.stringify would overflow its stack). */
const DEEP = '\u0000<10000-deep>';
const DEEP_JSON = `${'['.repeat(10000)}{"n":1}${']'.repeat(10000)}`;
const toJson = (v: unknown) => JSON.stringify(v).replaceAll(JSON.stringify(DEEP), DEEP_JSON);

/** The hostile value classes; `always` = no field may take it. */
type ValueClass = 'nul' | 'control' | 'surrogate' | 'long' | 'deep' | 'numeric' | 'wrongType' | 'unknownField' | 'repeat';
const around = (core: fc.Arbitrary<string>) =>
  fc.tuple(fc.string({ maxLength: 8 }), core, fc.string({ maxLength: 8 })).map((t) => t.join(''));
const VALUES: Record<ValueClass, fc.Arbitrary<unknown>> = {
  nul: around(fc.constant('\u0000')),
  control: around(fc.constantFrom('\u0001', '\u001f', '\u007f', '\u0085', '\u009f', '\n', '\t')),
  surrogate: around(fc.constantFrom('\ud800', '\udfff', '\udbff', '\udc00')),
  long: fc.integer({ min: 10 * 1024, max: 40 * 1024 }).map((n) => 'x'.repeat(n)),
  deep: fc.constant(DEEP),
  numeric: fc.constantFrom(
    2 ** 53,
    -(2 ** 53),
    2 ** 53 - 1,
    1e308,
    -1e308,
    -0,
    -1,
    1.5,
    1e15,
    'NaN',
    'Infinity',
    '-0',
    '1e999',
    4294967296,
  ),
  wrongType: fc.constantFrom(null, true, false, 0, 1, [], {}, [1, 2], [null], { a: 1 }, 'str', ''),
  unknownField: fc.constantFrom('extra', 'kind', 'message_id', '__proto__', '', '\u0000'),
  repeat: fc.constant(undefined),
};
const CLASSES = Object.keys(VALUES) as ValueClass[];

/**
 * Must this value be refused in a field of this kind? Only the certain cases (the rest must just
 * not break anything). `viaUrl`: the value went as a path or query string, where `0`, `true` or
 * `[[[[` may well be valid.
 */
function mustRefuse(kind: Kind, cls: ValueClass, v: unknown, viaUrl: boolean): boolean {
  if (cls === 'nul' || cls === 'surrogate' || cls === 'repeat') return true;
  if (viaUrl) {
    if (kind === 'tenant') return typeof v === 'string' && v !== '' && v !== 'acme';
    return kind === 'id' && (cls === 'control' || cls === 'long');
  }
  if (cls === 'deep') return true;
  if (cls === 'unknownField') return kind !== 'struct' && kind !== 'json';
  switch (kind) {
    case 'id':
      return cls === 'control' || cls === 'long' || typeof v !== 'string' || v.trim() === '';
    // Sent as an HTTP header value of every push notification: no controls, bounded.
    case 'header':
      return cls === 'control' || cls === 'long' || typeof v !== 'string';
    // Absent, empty or the caller's own (acme): any other tenant is refused wherever it is given.
    case 'tenant':
      return typeof v !== 'string' || (v !== '' && v !== 'acme');
    case 'role':
      return v !== 'ROLE_USER' && v !== 1;
    case 'int':
      return typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 2 ** 31 - 1;
    case 'bool':
      return typeof v !== 'boolean';
    case 'state':
      return !(Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 8) && !(typeof v === 'string' && v.startsWith('TASK_STATE_'));
    case 'time':
      return typeof v !== 'string' || !/^\d{4}-/.test(v);
    default:
      return false;
  }
}

/** Sets `path` in a copy of `obj` (creating objects/arrays on the way); unknownField adds a key to the object at `path`. */
function place(obj: Record<string, unknown>, path: Seg[], cls: ValueClass, v: unknown): Record<string, unknown> {
  const copy = structuredClone(obj);
  let cur: Record<string | number, unknown> = copy;
  for (const seg of path.slice(0, -1)) {
    if (typeof cur[seg] !== 'object' || cur[seg] === null) cur[seg] = typeof seg === 'number' ? [] : {};
    cur = cur[seg] as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (cls === 'unknownField') {
    const target = cur[last];
    if (typeof target === 'object' && target !== null && !Array.isArray(target))
      Object.defineProperty(target, String(v), { value: 1, enumerable: true });
    else cur[last] = { [String(v)]: 1 };
  } else cur[last] = v;
  return copy;
}

/** The field as the binding names it: `params.a.b[0]` (JSON-RPC), `a.b[0]` or the URL parameter (HTTP+JSON). */
function fieldName(prefix: string, path: Seg[]): string {
  let out = prefix;
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out;
}

/**
 * Rows of `target` a refused request must not change: its tasks, the fuzzed task's version (the
 * one every task operation names; tasks accepted by earlier valid cases move on by themselves as
 * the worker answers them), dedup entries, turns and push configs.
 */
async function stored(): Promise<string> {
  const { rows } = await db.query(
    `SELECT (SELECT count(*) || ':' || coalesce(max(version) FILTER (WHERE id = $1), 0) FROM dispatcher.tasks WHERE agent_id = 'target') AS tasks,
            (SELECT count(*) FROM dispatcher.message_dedup WHERE agent_id = 'target') AS dedup,
            (SELECT count(*) FROM dispatcher.executions e JOIN dispatcher.tasks t ON t.id = e.task_id WHERE t.agent_id = 'target') AS turns,
            (SELECT count(*) FROM dispatcher.push_configs WHERE task_id = $1) AS push`,
    [T],
  );
  return JSON.stringify(rows[0]);
}

interface Case {
  op: Operation;
  field: Field;
  cls: ValueClass;
  value: unknown;
}
const caseArb = (binding: 'rpc' | 'rest'): fc.Arbitrary<Case> =>
  fc
    .constantFrom(...OPERATIONS)
    .chain((op) => {
      const fields = binding === 'rpc' ? op.fields : op.fields.filter((f) => f.rest);
      return fc.tuple(fc.constant(op), fc.constantFrom(...fields), fc.constantFrom(...CLASSES));
    })
    .filter(([, field, cls]) => (binding === 'rest' && field.rest?.in === 'query') || cls !== 'repeat')
    .filter(
      ([, field, cls]) =>
        cls !== 'unknownField' || field.kind === 'object' || field.kind === 'part' || field.rest?.in === 'body' || binding === 'rpc',
    )
    .chain(([op, field, cls]) => VALUES[cls].map((value) => ({ op, field, cls, value })))
    .map((c) =>
      Object.assign(c, {
        [fc.toStringMethod]: () => `${c.op.method} ${fieldName('', c.field.path)} ${c.cls} ${JSON.stringify(c.value)?.slice(0, 80)}`,
      }),
    );

/** Checks one answer: never a fault; a refusal names the field and left nothing behind; a must-refuse value was refused. */
async function judge(c: Case, a: Answer, name: string, before: string, sent: unknown, viaUrl: boolean): Promise<void> {
  assert.ok(a.status < 500, `no 5xx (got ${a.status}: ${a.body.slice(0, 300)})`);
  if (a.status === 414 || a.status === 431) {
    // A URL over the HTTP server's header limit: refused before any route, without a body.
    assert.equal(await stored(), before, 'nothing stored');
    return;
  }
  let refused = false;
  let message = '';
  if (!a.contentType.startsWith('text/event-stream') && a.body !== '') {
    const r = JSON.parse(a.body) as { error?: { code: number | string; message: string } };
    if (r.error) {
      assert.notEqual(r.error.code, -32603, `no -32603: ${r.error.message}`);
      refused = r.error.code === -32602 || a.status === 400;
      message = r.error.message;
    }
  }
  const last = name.split(/[.[]/).pop()!.replace(/\]$/, '');
  if (refused) {
    // Named by its path; a check made later (tenant match, push URL policy, cursor decoding) names the field itself.
    assert.ok(
      message.startsWith(name) || message.toLowerCase().includes(last.toLowerCase()),
      `the error names ${name}: "${message.slice(0, 200)}"`,
    );
    assert.equal(await stored(), before, `nothing stored for a refused request (${message.slice(0, 120)})`);
  } else if (mustRefuse(c.field.kind, c.cls, sent, viaUrl)) {
    assert.fail(`a ${c.cls} value in ${name} must be refused; got ${a.status} ${a.body.slice(0, 200)}`);
  }
}

test('schema-driven, JSON-RPC: each hostile value class in each field of each operation is refused naming the field, nothing stored', async () => {
  await fc.assert(
    fc.asyncProperty(caseArb('rpc'), async (c) => {
      const before = await stored();
      const params = place(c.op.params(), c.field.path, c.cls, c.value);
      const a = await sendRawUntilStream(
        env.url,
        '/a2a/target',
        'POST',
        auth,
        Buffer.from(toJson({ jsonrpc: '2.0', id: 1, method: c.op.method, params })),
      );
      const name = fieldName('params', c.field.path);
      await judge(c, a, name, before, c.value, false);
    }),
    { numRuns: runs(2000) },
  );
});

test('schema-driven, HTTP+JSON: the same in bodies, path and query parameters', async () => {
  await fc.assert(
    fc.asyncProperty(caseArb('rest'), async (c) => {
      const before = await stored();
      const where = c.field.rest!;
      let value = c.value;
      if (where.in !== 'body') {
        // A URL carries strings: other values as their JSON text, a repeat as two values, a
        // surrogate as the UTF-8 bytes it would have (which do not decode).
        if (c.cls === 'repeat') value = where.in === 'query' ? ['1', '2'] : 'x';
        else if (typeof value !== 'string') value = value === DEEP ? '[[[[' : JSON.stringify(value);
      }
      const params = place(c.op.params(), c.field.path, c.cls === 'unknownField' && where.in !== 'body' ? 'wrongType' : c.cls, value);
      const enc = (v: unknown) => {
        const s = String(v);
        if (s === '') return '%20';
        return /[\ud800-\udfff]/.test(s)
          ? s.replace(/[\ud800-\udfff]/g, '%ED%A0%80').replace(/[^%\w]/g, (ch) => encodeURIComponent(ch))
          : encodeURIComponent(s);
      };
      if (where.in === 'query' && typeof value === 'string' && /[\ud800-\udfff]/.test(value)) return; // a URL cannot carry one
      const r = c.op.rest(params, enc);
      const b = r.body === undefined ? undefined : Buffer.from(toJson(r.body));
      const a = await sendRawUntilStream(env.url, `/a2a/target${r.path}`, r.method, auth, r.method === 'GET' ? undefined : b);
      if (where.in === 'path' && c.cls === 'surrogate') {
        // Undecodable percent-encoding: refused before any route, so without a field name.
        assert.equal(a.status, 400, a.body.slice(0, 200));
        return;
      }
      const name = where.in === 'body' ? fieldName('', c.field.path) : where.name;
      await judge(c, a, name, before, value, where.in !== 'body');
    }),
    { numRuns: runs(2000) },
  );
});

// A2A 0.3 (no A2A-Version): each hostile value class in each field of the 0.3 shapes, walked from
// the schemas the dispatcher validates them with. A refusal names the field; nothing is a 5xx.
const v03 = { 'content-type': 'application/json', authorization: 'Bearer demo-acme' };
const rpc03Base = (): Record<string, Record<string, unknown>> => ({
  'message/send': {
    message: {
      kind: 'message',
      messageId: randomUUID(),
      role: 'user',
      parts: [{ kind: 'text', text: 'fuzz 0.3', metadata: { k: 'v' } }],
      metadata: { k: 'v' },
      referenceTaskIds: [T],
      extensions: [],
    },
    configuration: {
      blocking: false,
      historyLength: 1,
      acceptedOutputModes: ['text/plain'],
      pushNotificationConfig: { url: 'http://127.0.0.1:9/hook', token: 't', authentication: { schemes: ['Bearer'], credentials: 'c' } },
    },
    metadata: { k: 'v' },
  },
  'tasks/get': { id: T, historyLength: 1, metadata: {} },
  'tasks/cancel': { id: randomUUID(), metadata: {} },
  'tasks/pushNotificationConfig/set': { taskId: T, pushNotificationConfig: { id: 'cfg03', url: 'http://127.0.0.1:9/hook' } },
  'tasks/pushNotificationConfig/get': { id: T, pushNotificationConfigId: 'cfg03' },
  'tasks/pushNotificationConfig/list': { id: T },
  'tasks/pushNotificationConfig/delete': { id: T, pushNotificationConfigId: 'nope' },
});
const rpc03Cases = Object.keys(rpc03Base()).flatMap((method) =>
  schemaFields(LEGACY_PARAMS[method as keyof typeof LEGACY_PARAMS]).map((field) => ({ method, field })),
);
const hostile03 = (kind: Parameters<typeof wrongTypeFor>[0]) =>
  fc.oneof(controlStrings, hugeString, numericExtremes, deepNesting, wrongTypeFor(kind), fc.constant({ unknownField: 1 }));

test('schema-driven, A2A 0.3 JSON-RPC: hostile values in each field are refused naming the field, never a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...rpc03Cases), fc.integer(), async ({ method, field }, seed) => {
      const value = fc.sample(hostile03(field.kind), { numRuns: 1, seed })[0];
      const params = setPath(rpc03Base()[method], field.path, value);
      const deep = value instanceof DeepJson ? value : undefined;
      const a = await send('/a2a/target', 'POST', v03, Buffer.from(bodyText({ jsonrpc: '2.0', id: 1, method, params }, deep)));
      assert.ok(a.status < 500, `${method} ${field.path.join('.')}: ${a.status} ${a.body.slice(0, 200)}`);
      const r = JSON.parse(a.body) as { result?: unknown; error?: { code: number; message: string } };
      if (r.error) {
        assert.ok(RPC_CODES.has(r.error.code), `documented code, got ${r.error.code}: ${r.error.message}`);
        if (r.error.code === -32602) assert.match(r.error.message, /^params[.[:]/, `${method} ${field.path.join('.')}`);
      }
    }),
    { numRuns: runs(600) },
  );
});

test('schema-driven, A2A 0.3 HTTP+JSON: the same in the message:send body, never a 5xx', async () => {
  const body = () => ({
    message: { messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 'fuzz' }, { data: { data: { ok: true } } }], metadata: {} },
    configuration: { blocking: false, historyLength: 1, pushNotification: { url: 'http://127.0.0.1:9/hook' } },
  });
  const fields = schemaFields(LEGACY_BODIES.send);
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...fields), fc.integer(), async (field, seed) => {
      const value = fc.sample(hostile03(field.kind), { numRuns: 1, seed })[0];
      const deep = value instanceof DeepJson ? value : undefined;
      const a = await send('/a2a/target/v1/message:send', 'POST', v03, Buffer.from(bodyText(setPath(body(), field.path, value), deep)));
      assert.ok([201, 400].includes(a.status), `${field.path.join('.')}: ${a.status} ${a.body.slice(0, 200)}`);
      if (a.status === 400) {
        const r = JSON.parse(a.body) as { code: number; message: string };
        assert.equal(r.code, -32602);
        assert.match(r.message, /^(message|configuration|metadata|body)[.[:]/, `${field.path.join('.')}: ${r.message}`);
      }
    }),
    { numRuns: runs(300) },
  );
});

test('after the fuzzing the dispatcher still serves and its heap returns to the baseline', async () => {
  const ok = await send(
    '/a2a/echo',
    'POST',
    { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer demo-acme' },
    Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: jsonMessage('still here') } })),
  );
  assert.equal(ok.status, 200);
  assert.match(ok.body, /echo: still here/);
  await heapBackNear(baseline);
});
