// The agents' /ops endpoints list every tenant's task ids and idempotency keys and settle unknown
// side effects: with the defaults (no AGENTS_OPS_TOKEN) every /ops request is refused; with a token
// only a request carrying it gets through. The runtime listens on 127.0.0.1 by default.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { newId } from '@mesh/contract';
import { testRun, uniquePrefix } from '../support/infra.js';
import { holdBody, rawRequest } from '../support/raw-http.js';
import { startConsole } from '@mesh/app-cli';
import { startTestAgents } from '../support/agents-runtime.js';
import { ledgerDatabase } from '../agents/agents-fixtures.js';

const { url: db, ledger } = await ledgerDatabase('sec-ops');
const defaults = await startTestAgents(uniquePrefix('sec-ops-a'), db, { AGENTS_RUN: 'echo-agent' });
const TOKEN = 'ops-token-for-the-security-spec';
const guarded = await startTestAgents(uniquePrefix('sec-ops-b'), db, { AGENTS_RUN: 'echo-agent', AGENTS_OPS_TOKEN: TOKEN });

/** An unknown refund outcome in the effect ledger, as a timed-out issue_refund leaves it. */
async function unknownRefund(): Promise<string> {
  const taskId = newId();
  const key = `acme:${taskId}:mcp__billing__issue_refund:${newId()}`;
  const owner = `w#${newId()}`;
  await ledger.claim(
    {
      key,
      tenant: 'acme',
      taskId,
      executionId: `acme:${taskId}:0`,
      tool: 'mcp__billing__issue_refund',
      argsHash: 'h',
      args: { invoice_id: 'INV-2291', amount_cents: 12900 },
      sideEffect: true,
      owner,
    },
    60_000,
  );
  await ledger.markUnknown(key, owner, 'timeout: no answer');
  return key;
}

const resolve = (base: string, key: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/ops/unknowns/${encodeURIComponent(key)}/resolve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ state: 'absent' }),
  });

test('with the defaults every /ops read and mutation is refused (401 JSON) and nothing is resolved', async () => {
  const key = await unknownRefund();
  for (const path of ['/ops/unknowns', '/ops/workers', '/ops/lag']) {
    const res = await fetch(`${defaults.url}${path}`);
    assert.equal(res.status, 401, path);
    assert.match(((await res.json()) as { error: string }).error, /AGENTS_OPS_TOKEN/);
  }
  assert.equal((await resolve(defaults.url, key)).status, 401);
  // No token configured means no token works either.
  assert.equal((await resolve(defaults.url, key, { authorization: 'Bearer anything-at-all' })).status, 401);
  assert.equal((await ledger.get(key))?.state, 'unknown', 'the unknown refund is still unknown: it cannot be paid again');
});

test('with AGENTS_OPS_TOKEN set, only requests carrying it read and resolve', async () => {
  const key = await unknownRefund();
  assert.equal((await fetch(`${guarded.url}/ops/unknowns`)).status, 401);
  assert.equal((await fetch(`${guarded.url}/ops/unknowns`, { headers: { authorization: 'Bearer wrong-token-xx' } })).status, 401);
  assert.equal((await resolve(guarded.url, key, { authorization: 'Bearer wrong-token-xx' })).status, 401);
  assert.equal((await ledger.get(key))?.state, 'unknown');
  const auth = { authorization: `Bearer ${TOKEN}` };
  const listed = (await (await fetch(`${guarded.url}/ops/unknowns`, { headers: auth })).json()) as { unknowns: Array<{ key: string }> };
  assert.ok(listed.unknowns.some((u) => u.key === key));
  const done = await resolve(guarded.url, key, auth);
  assert.equal(done.status, 201);
  assert.equal((await ledger.get(key))?.state, 'absent');
});

test('the agents runtime listens on 127.0.0.1 by default', async () => {
  const { hostname, port } = new URL(defaults.url);
  assert.equal(hostname, '127.0.0.1');
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  if (!external) return;
  const reached = await fetch(`http://${external}:${port}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
    () => true,
    () => false,
  );
  assert.equal(reached, false, `not reachable on ${external}`);
});

test('/ops refuses a repeated Authorization header, even when every copy is the token', async () => {
  const twice = { authorization: [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`] } as unknown as Record<string, string>;
  const r = await rawRequest(`${guarded.url}/ops/unknowns`, { headers: twice });
  assert.equal(r.status, 401, r.body);
  assert.match(r.body, /exactly one Authorization header/);
  assert.equal((await rawRequest(`${guarded.url}/ops/unknowns`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
});

test('an /ops body without the token is answered 401 before it is read, and its connection closed', async () => {
  // Headers only, announcing 900 KB: a runtime that read bodies before authenticating would wait
  // for the body (and buffer it) instead of answering.
  const headersOnly = { contentLength: 900_000, sendBytes: 0 };
  const path = '/ops/unknowns/some-key/resolve';
  const cases: Array<[string, string, Record<string, string>]> = [
    [defaults.url, path, {}],
    [defaults.url, path, { authorization: 'Bearer anything-at-all' }],
    [guarded.url, path, {}],
    [guarded.url, path, { authorization: 'Bearer wrong-token-xx' }],
    // Whatever the route: no route of the runtime takes a body from a caller without the token.
    [guarded.url, '/healthz', {}],
  ];
  for (const [base, p, headers] of cases) {
    assert.deepEqual(
      await holdBody(base, p, headers, headersOnly),
      { status: 401, closed: true },
      `${base === guarded.url ? 'guarded' : 'defaults'} ${p}`,
    );
  }
  const twice = await rawRequest(`${guarded.url}${path}`, {
    method: 'POST',
    headers: {
      authorization: [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`] as unknown as string,
      'content-type': 'application/json',
      'content-length': '900000',
    },
    timeoutMs: 3000,
  }).catch((e: Error) => e);
  assert.ok(!(twice instanceof Error) && twice.status === 401, `a repeated Authorization header: ${String(twice)}`);
  const many = await Promise.all(Array.from({ length: 100 }, () => holdBody(guarded.url, path, {}, headersOnly)));
  assert.deepEqual(new Set(many.map((r) => r?.status)), new Set([401]));
  // The refusal is the /ops error body, as from the routes.
  const refused = await rawRequest(`${guarded.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ state: 'absent' }),
  });
  assert.equal(refused.status, 401);
  assert.match((JSON.parse(refused.body) as { error: string }).error, /AGENTS_OPS_TOKEN/);
});

test('an /ops body with the token is read as before, within the body limit; reads stay as they were', async () => {
  const auth = { authorization: `Bearer ${TOKEN}` };
  // Held back, the operator's body is awaited: no answer yet.
  assert.equal(
    await holdBody(guarded.url, '/ops/unknowns/some-key/resolve', auth, { contentLength: 900_000, sendBytes: 0, waitMs: 500 }),
    undefined,
  );
  const key = await unknownRefund();
  assert.equal((await resolve(guarded.url, key, auth)).status, 201);
  const big = await rawRequest(`${guarded.url}/ops/unknowns/${encodeURIComponent(key)}/resolve`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ state: 'absent', text: 'x'.repeat(1_100_000) }),
  });
  assert.equal(big.status, 413, 'the body limit still applies');
  assert.equal((await rawRequest(`${guarded.url}/healthz`)).status, 200);
  assert.equal((await rawRequest(`${guarded.url}/ops/workers`, { headers: auth })).status, 200);
});

test('/ops refuses NUL and control characters in paths, queries and bodies with 400 naming the field, never a database error', async () => {
  const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const key = await unknownRefund();
  for (const [method, path, body, field] of [
    ['GET', '/ops/tasks/a%00b', undefined, 'taskId'],
    ['GET', '/ops/tasks?tenant=%00', undefined, 'tenant'],
    ['GET', '/ops/tasks?agent=echo%01agent', undefined, 'agent'],
    ['POST', '/ops/unknowns/k%00/resolve', { state: 'absent' }, 'key'],
    ['POST', `/ops/unknowns/${encodeURIComponent(key)}/resolve`, { state: 'ok', text: 'paid\u0000' }, 'text'],
    ['GET', `/ops/tasks/${'x'.repeat(2000)}`, undefined, 'taskId'],
  ] as const) {
    const r = await rawRequest(`${guarded.url}${path}`, {
      method,
      headers: auth,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.equal(r.status, 400, `${method} ${path}: ${r.status} ${r.body}`);
    assert.match((JSON.parse(r.body) as { error: string }).error, new RegExp(`^${field}: `), path);
  }
  assert.equal((await ledger.get(key))?.state, 'unknown', 'a refused resolution settles nothing');
});

test('the console answers malformed percent-encoding and control characters in its URLs with 400', async () => {
  const consoleApp = await startConsole(
    {
      directoryUrl: 'http://127.0.0.1:9',
      dispatcherUrl: 'http://127.0.0.1:9',
      agentsUrl: guarded.url,
      opsToken: TOKEN,
      brokers: testRun().brokers,
      prefix: uniquePrefix('sec-ops-console'),
    },
    { port: 0, sampleIntervalMs: 600_000 },
  );
  after(() => consoleApp.stop());
  for (const path of ['api/tasks/%ff/x', 'api/tasks/echo-agent/%E0%A4%A', 'api/tasks/echo-agent/a%00b', 'api/overview?agent=%00']) {
    const r = await rawRequest(`${consoleApp.url}${path}`);
    assert.equal(r.status, 400, `${path}: ${r.status} ${r.body}`);
    assert.match((JSON.parse(r.body) as { error: string }).error, /^(path|agent): /);
  }
});
