import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { OutgoingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
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
  heapBackNear,
  settledHeap,
  wrongType,
} from './fuzz-support.js';

// Generated hostile requests against both A2A bindings of one dispatcher. Every answer must be
// a documented error in the binding's format (or a success for the rare valid request); never
// a 5xx, never a hang, and the heap must settle back near its baseline afterwards.

const env = await startTestDispatcher('fuzz-dispatcher', {}, { DISPATCHER_BODY_LIMIT: '64kb' });
await publishAgents(env.kafka, env.topics, [agentRecord('echo'), agentRecord('secret', { tenant: 'globex', visibility: 'private' })]);
// Both agents are served: a valid streaming send (or subscribe) the generator happens to build
// stays open until its task ends, so an agent without a worker would look like a hang.
const workers = [await startEchoWorker(env.kafka, env.topics, 'echo'), await startEchoWorker(env.kafka, env.topics, 'secret')];
after(() => Promise.all(workers.map((w) => w.stop())));
await eventually('echo served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);

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
  // An undecodable agent id never reaches the A2A edge (no route matches): the app's generic 400.
  const rpc = await send(
    '/a2a/%ff',
    'POST',
    h,
    Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: 'x' } })),
  );
  assert.equal(rpc.status, 400);
});

test('JSON-RPC binding: hostile envelopes, params, bodies and headers get documented errors', async () => {
  await fc.assert(
    fc.asyncProperty(agentPath, contentType, version, authorization, body, async (agent, ct, v, auth, b) => {
      checkJsonRpc(await send(`/a2a/${agent}`, 'POST', headersOf(ct, v, auth), b));
    }),
    { numRuns: runs(1000) },
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
      fc.oneof(
        params.map((p) => printable(Buffer.from(JSON.stringify(p) ?? 'null'))),
        brokenBody.map(printable),
        fc.constant(undefined),
      ),
      async (agent, method, route, q, ct, v, auth, b) => {
        checkRest(await send(`/a2a/${agent}${route}${q}`, method, headersOf(ct, v, auth), method === 'GET' ? undefined : b));
      },
    ),
    { numRuns: runs(1000) },
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
