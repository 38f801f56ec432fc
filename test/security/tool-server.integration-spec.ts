// billing-tools as an outside caller meets it: every request needs an audience-bound tool token
// (401 JSON before any session exists otherwise), the tenant comes only from the verified token,
// idempotency keys belong to a tenant, a refund is bounded by the duplicate charge, sessions are
// capped and expire when idle, and every error is a JSON body. MCP through the official SDK
// clients, on both revisions it serves: the 1.32 client (2025-11-25, a session) and the 2.4.0
// client negotiating 2026-07-28 (stateless).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as NextClient, StreamableHTTPClientTransport as NextHttpTransport } from '@modelcontextprotocol/client';
import { HmacToolTokenMinter, ToolMeta } from '@mesh/tool-gateway';
import { eventually, freshDatabase, sql } from '../support/infra.js';
import { freePort, repoRoot, spawnNode } from '../support/processes.js';
import { holdBody, pushBody } from '../support/raw-http.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import type { RunningBillingTools } from '@mesh/app-billing-tools';
import { refundCount, startTestBillingTools } from '../agents/agents-fixtures.js';

const minter = new HmacToolTokenMinter(TEST_TOOL_TOKEN_SECRET);
const AUD = 'billing-tools';
const callToken = (tenant: string, subject = 'alice') => minter.mint({ audience: AUD, tenant, subject, taskId: 't1' });

/** What the specs need of either SDK's client. */
interface ToolClient {
  callTool(params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> }): Promise<CallToolResult>;
  close(): Promise<void>;
}
const bearerInit = (bearer?: string) => (bearer ? { requestInit: { headers: { authorization: `Bearer ${bearer}` } } } : {});

/** The 1.32 SDK client (2025-11-25, one session), every HTTP request carrying `bearer` (a connection or a call token). */
async function client(url: string, bearer?: string): Promise<Client> {
  const c = new Client({ name: 'outside-tester', version: '0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), bearerInit(bearer)));
  return c;
}

/** The 2.4.0 SDK client negotiating the revision; billing-tools settles on 2026-07-28 (stateless). */
async function nextClient(url: string, bearer?: string): Promise<NextClient> {
  const c = new NextClient({ name: 'outside-tester', version: '0' }, { versionNegotiation: { mode: 'auto' } });
  await c.connect(new NextHttpTransport(new URL(url), bearerInit(bearer)));
  assert.equal(c.getNegotiatedProtocolVersion(), '2026-07-28');
  return c;
}

const revisions = [
  { revision: '2025-11-25', connect: client as (url: string, bearer?: string) => Promise<ToolClient> },
  { revision: '2026-07-28', connect: nextClient as (url: string, bearer?: string) => Promise<ToolClient> },
];

// Each revision against its own billing-tools and database (the tenant cases refund the same
// invoices), all started before the first test so they live until the last.
const servedRevisions: Array<(typeof revisions)[number] & { db: string; billing: RunningBillingTools; worker: ToolClient }> = [];
for (const r of revisions) {
  const db = await freshDatabase(`sec-tool-server-${r.revision}`);
  const billing = await startTestBillingTools(db);
  const worker = await r.connect(billing.mcpUrl, await minter.mintConnection({ audience: AUD, subject: 'worker' }));
  servedRevisions.push({ ...r, db, billing, worker });
}
// The revision-neutral cases run against the first: its worker is the 1.32 client, on a session.
const { db, billing } = servedRevisions[0];
const worker = servedRevisions[0].worker as Client;

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });

/** A JSON-RPC error body: JSON, no HTML, no stack trace or file path. */
async function assertJsonError(res: Response, status: number): Promise<{ error: { code: number; message: string } }> {
  assert.equal(res.status, status);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const text = await res.text();
  assert.doesNotMatch(text, /<html|<!DOCTYPE|<pre>|\n\s+at |node_modules|\/work\/|\.js:\d+/i, text);
  const body = JSON.parse(text) as { error: { code: number; message: string } };
  assert.equal(typeof body.error?.message, 'string');
  return body;
}

test('without a token, or with a token of the wrong audience, an expired or a forged one: 401 JSON, no session', async () => {
  const expired = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('agent-mesh-agents')
    .setAudience(AUD)
    .setSubject('worker')
    .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
    .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
    .sign(new TextEncoder().encode(TEST_TOOL_TOKEN_SECRET));
  const refused: Array<[string, Record<string, string>]> = [
    ['no token', {}],
    ['not a bearer', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    [
      'wrong audience',
      { authorization: `Bearer ${await minter.mint({ audience: 'other-server', tenant: 'acme', subject: 'a', taskId: 't' })}` },
    ],
    ['expired', { authorization: `Bearer ${expired}` }],
    [
      'forged',
      {
        authorization: `Bearer ${await new HmacToolTokenMinter('another-secret-of-enough-length').mintConnection({ audience: AUD, subject: 'x' })}`,
      },
    ],
    ['garbage', { authorization: 'Bearer not.a.jwt' }],
  ];
  const sessions = billing.sessionCount();
  for (const [what, headers] of refused) {
    const res = await post(billing.mcpUrl, JSON.stringify(initialize), headers);
    const body = await assertJsonError(res, 401);
    assert.match(body.error.message, /token/, what);
    assert.equal(res.headers.get('mcp-session-id'), null, `${what}: no session id`);
  }
  assert.equal(billing.sessionCount(), sessions, 'no session was created for a refused request');
  // The official clients meet the same wall (the 2.4.0 one at its `server/discover` probe, which
  // is an error to it, not a sign of an older server), and so does a request on an existing session.
  await assert.rejects(client(billing.mcpUrl), /401|token/);
  await assert.rejects(nextClient(billing.mcpUrl), /401|token/);
  const forged = await new HmacToolTokenMinter('another-secret-of-enough-length').mintConnection({ audience: AUD, subject: 'x' });
  await assert.rejects(nextClient(billing.mcpUrl, forged), /401|token/);
  const sid = (worker.transport as StreamableHTTPClientTransport).sessionId!;
  const onSession = await post(billing.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { 'mcp-session-id': sid });
  await assertJsonError(onSession, 401);
});

for (const { revision, connect, db, billing, worker } of servedRevisions) {
  test(`${revision}: _meta naming another tenant than the token is refused; without a call token nothing names a tenant`, async () => {
    const before = await refundCount(db, 'globex', 'INV-3108');
    const claimGlobex = await worker.callTool({
      name: 'issue_refund',
      arguments: { invoice_id: 'INV-3108', amount_cents: 1, reason: 'x' },
      _meta: { [ToolMeta.token]: await callToken('acme'), [ToolMeta.tenant]: 'globex', [ToolMeta.idempotencyKey]: 'k-meta' },
    });
    assert.equal(claimGlobex.isError, true);
    assert.match(textOf(claimGlobex as CallToolResult), /does not match the tenant of the token/);
    // The reproduction: a bare _meta tenant (no call token) on a worker connection.
    const bare = await worker.callTool({
      name: 'get_invoice',
      arguments: { invoice_id: 'INV-3108' },
      _meta: { [ToolMeta.tenant]: 'globex' },
    });
    assert.equal(bare.isError, true);
    assert.match(textOf(bare as CallToolResult), /token naming the tenant is required/);
    const forgedCall = await worker.callTool({
      name: 'get_invoice',
      arguments: { invoice_id: 'INV-3108' },
      _meta: {
        [ToolMeta.token]: await new HmacToolTokenMinter('another-secret-of-enough-length').mint({
          audience: AUD,
          tenant: 'globex',
          subject: 'x',
          taskId: 't',
        }),
      },
    });
    assert.equal(forgedCall.isError, true);
    assert.match(textOf(forgedCall as CallToolResult), /not a valid token/);
    const otherSubject = await worker.callTool({
      name: 'get_invoice',
      arguments: { invoice_id: 'INV-2292' },
      _meta: { [ToolMeta.token]: await callToken('acme', 'alice'), [ToolMeta.subject]: 'mallory' },
    });
    assert.equal(otherSubject.isError, true);
    assert.equal(await refundCount(db, 'globex', 'INV-3108'), before, 'nothing refunded');
  });

  test(`${revision}: a token for acme cannot read or refund globex's invoice, nor read its refunds`, async () => {
    const globex = await callToken('globex', 'bob');
    const acme = await callToken('acme');
    const own = await worker.callTool({ name: 'get_invoice', arguments: { invoice_id: 'INV-3107' }, _meta: { [ToolMeta.token]: globex } });
    assert.equal(own.isError, undefined);
    const refunded = await worker.callTool({
      name: 'issue_refund',
      arguments: { invoice_id: 'INV-3107', amount_cents: 100, reason: 'duplicate' },
      _meta: { [ToolMeta.token]: globex, [ToolMeta.idempotencyKey]: 'globex-only-key' },
    });
    assert.equal(refunded.isError, undefined, textOf(refunded as CallToolResult));
    const read = await worker.callTool({ name: 'get_invoice', arguments: { invoice_id: 'INV-3107' }, _meta: { [ToolMeta.token]: acme } });
    assert.equal(read.isError, true);
    assert.match(textOf(read as CallToolResult), /not found/);
    const refund = await worker.callTool({
      name: 'issue_refund',
      arguments: { invoice_id: 'INV-3107', amount_cents: 100, reason: 'x' },
      _meta: { [ToolMeta.token]: acme, [ToolMeta.idempotencyKey]: 'acme-tries-globex' },
    });
    assert.equal(refund.isError, true);
    const status = await worker.callTool({
      name: 'refund_status',
      arguments: { idempotency_key: 'globex-only-key' },
      _meta: { [ToolMeta.token]: acme },
    });
    assert.deepEqual(status.structuredContent, { status: 'not_found' });
    // A tenant-bound bearer token (the call token used as the connection token) acts for that tenant only.
    const asAcme = await connect(billing.mcpUrl, acme);
    const viaBearer = await asAcme.callTool({ name: 'get_invoice', arguments: { invoice_id: 'INV-3107' } });
    assert.equal(viaBearer.isError, true);
    const mixed = await asAcme.callTool({
      name: 'get_invoice',
      arguments: { invoice_id: 'INV-3107' },
      _meta: { [ToolMeta.token]: globex },
    });
    assert.equal(mixed.isError, true);
    assert.match(textOf(mixed as CallToolResult), /different tenants/);
    await asAcme.close();
    assert.equal(await refundCount(db, 'globex', 'INV-3107'), 1);
  });

  test(`${revision}: the same idempotency key in two tenants is two refunds`, async () => {
    const key = 'shared-key-1';
    const g = await worker.callTool({
      name: 'issue_refund',
      arguments: { invoice_id: 'INV-3107', amount_cents: 200, reason: 'duplicate' },
      _meta: { [ToolMeta.token]: await callToken('globex', 'bob'), [ToolMeta.idempotencyKey]: key },
    });
    assert.equal(g.isError, undefined, textOf(g as CallToolResult));
    const a = await worker.callTool({
      name: 'issue_refund',
      arguments: { invoice_id: 'INV-2291', amount_cents: 300, reason: 'duplicate' },
      _meta: { [ToolMeta.token]: await callToken('acme'), [ToolMeta.idempotencyKey]: key },
    });
    assert.equal(a.isError, undefined, textOf(a as CallToolResult));
    assert.equal((a.structuredContent as { invoice_id: string }).invoice_id, 'INV-2291');
    const rows = await sql<{ tenant: string }>(db, `SELECT tenant FROM billing.refunds WHERE idempotency_key = $1 ORDER BY tenant`, [key]);
    assert.deepEqual(
      rows.map((r) => r.tenant),
      ['acme', 'globex'],
    );
  });

  test(`${revision}: a refund is bounded by the duplicate charge; an invoice charged once has nothing refundable`, async () => {
    await sql(
      db,
      `INSERT INTO billing.invoices (tenant, invoice_id, customer, amount_cents, currency, charges) VALUES ('acme', 'INV-7701', 'T', 5000, 'EUR', 2)`,
    );
    const acme = await callToken('acme');
    const refund = (invoice_id: string, amount_cents: number, key: string) =>
      worker.callTool({
        name: 'issue_refund',
        arguments: { invoice_id, amount_cents, reason: 'duplicate' },
        _meta: { [ToolMeta.token]: acme, [ToolMeta.idempotencyKey]: key },
      }) as Promise<CallToolResult>;
    const tooMuch = await refund('INV-7701', 5001, 'b1');
    assert.equal(tooMuch.isError, true);
    assert.match(textOf(tooMuch), /only 5000 cents of INV-7701 are refundable/);
    assert.equal((await refund('INV-7701', 3000, 'b2')).isError, undefined);
    const rest = await refund('INV-7701', 2001, 'b3');
    assert.match(textOf(rest), /only 2000 cents/);
    assert.equal((await refund('INV-7701', 2000, 'b4')).isError, undefined);
    assert.match(textOf(await refund('INV-7701', 1, 'b5')), /already refunded \(refund [0-9a-f-]{36}\)/);
    const once = await refund('INV-2292', 1, 'b6');
    assert.equal(once.isError, true);
    assert.match(textOf(once), /charged once/);
    assert.equal(await refundCount(db, 'acme', 'INV-7701'), 2);
    assert.equal(await refundCount(db, 'acme', 'INV-2292'), 0);
  });
}

test('2025 sessions are capped (503 JSON over the cap) and expire when idle (404 afterwards); 2026-07-28 requests hold none', async () => {
  const small = await startTestBillingTools(db, { BILLING_TOOLS_MAX_SESSIONS: '2', BILLING_TOOLS_SESSION_IDLE_MS: '400' });
  const auth = { authorization: `Bearer ${await minter.mintConnection({ audience: AUD, subject: 'worker' })}` };
  const open = async () => post(small.mcpUrl, JSON.stringify(initialize), auth);
  const first = await open();
  const second = await open();
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  const sid = first.headers.get('mcp-session-id')!;
  assert.ok(sid);
  const over = await open();
  const body = await assertJsonError(over, 503);
  assert.match(body.error.message, /too many open sessions/);
  assert.ok(over.headers.get('retry-after'));
  assert.equal(small.sessionCount(), 2);
  // A 2026-07-28 client holds no session between requests: the cap is not in its way and it opens none.
  const stateless = await nextClient(small.mcpUrl, auth.authorization.slice('Bearer '.length));
  assert.deepEqual((await stateless.listTools()).tools.map((t) => t.name).sort(), ['get_invoice', 'issue_refund', 'refund_status']);
  assert.equal(small.sessionCount(), 2);
  await stateless.close();
  // Walked away from: closed after the idle time, then a new session fits again.
  await eventually('idle sessions expired', () => small.sessionCount() === 0, 5000);
  const gone = await post(small.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), {
    ...auth,
    'mcp-session-id': sid,
  });
  await assertJsonError(gone, 404);
  assert.equal((await open()).status, 200);
});

test('malformed JSON, an oversized body, an unknown route and a wrong method get JSON errors, never HTML or a stack', async () => {
  const auth = { authorization: `Bearer ${await minter.mintConnection({ audience: AUD, subject: 'worker' })}` };
  const malformed = await assertJsonError(await post(billing.mcpUrl, '{"jsonrpc":"2.0",', auth), 400);
  assert.equal(malformed.error.code, -32700);
  await assertJsonError(await post(billing.mcpUrl, JSON.stringify({ pad: 'x'.repeat(1_100_000) }), auth), 413);
  const garbageBr = await post(billing.mcpUrl, '{"a":', { ...auth, 'content-encoding': 'br' });
  await assertJsonError(garbageBr, garbageBr.status === 415 ? 415 : 400);
  // A 2026-07-28 request the SDK refuses (a revision it does not serve) is a JSON-RPC body as well.
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2099-01-01',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const unsupported = await assertJsonError(
    await post(billing.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: envelope } }), {
      ...auth,
      'mcp-protocol-version': '2099-01-01',
    }),
    400,
  );
  assert.equal(unsupported.error.code, -32022);
  // Without a token the body is never parsed: 401 first, and a body still coming is not waited
  // for (the connection closes); a slow client cannot hold a socket past the request timeout.
  await assertJsonError(await post(billing.mcpUrl, '{"jsonrpc":"2.0",'), 401);
  assert.deepEqual(await holdBody(billing.mcpUrl, '/mcp', {}, { contentLength: 100_000, waitMs: 3000 }), { status: 401, closed: true });
  const over = await pushBody(
    billing.mcpUrl,
    '/mcp',
    { authorization: `Bearer ${await callToken('acme')}`, accept: 'application/json, text/event-stream' },
    { chunked: true },
  );
  assert.equal(over.status, 413, over.answer.slice(0, 200));
  assert.ok(over.closedByServer && over.bodyBytesSent < 8 * 1024 * 1024, `closed after ${over.bodyBytesSent} bytes`);
  await assertJsonError(await fetch(new URL('/nope', billing.mcpUrl)), 404);
  await assertJsonError(await post(new URL('/', billing.mcpUrl).toString(), '{"jsonrpc":'), 404);
  await assertJsonError(await fetch(billing.mcpUrl, { method: 'PUT', headers: auth }), 404);
});

test('billing-tools refuses to start without a token secret, and listens on 127.0.0.1 unless HTTP_HOST says otherwise', async () => {
  const main = join(repoRoot, 'apps/billing-tools/dist/main.js');
  const noSecret = spawnNode(main, { DATABASE_URL: db, BILLING_TOKEN_SECRET: '', BILLING_TOOLS_PORT: String(await freePort()) });
  const { code } = await noSecret.exited;
  assert.equal(code, 1);
  assert.match(noSecret.stderr(), /BILLING_TOKEN_SECRET.*required/);
  assert.equal(noSecret.stderr().trim().split('\n').length, 1, 'one line');

  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  const reachable = async (host: string, port: number) =>
    fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false,
    );
  const port = await freePort();
  const local = spawnNode(main, {
    DATABASE_URL: db,
    BILLING_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
    BILLING_TOOLS_PORT: String(port),
    LOG_LEVEL: 'info',
  });
  await eventually('billing-tools up', () => reachable('127.0.0.1', port));
  // Its start-up line is a JSON log line on stdout (info).
  await eventually('start-up line', () => /"msg":"MCP on http:\/\/127\.0\.0\.1:/.test(local.stdout()));
  if (external) assert.equal(await reachable(external, port), false, `not reachable on ${external}`);
  local.child.kill('SIGTERM');
  await local.exited;
  if (external) {
    const wide = await freePort();
    spawnNode(main, {
      DATABASE_URL: db,
      BILLING_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
      BILLING_TOOLS_PORT: String(wide),
      HTTP_HOST: '0.0.0.0',
    });
    await eventually('billing-tools on every interface', () => reachable(external, wide));
  }
});

test('billing-tools answers /livez and /metrics like every service: requests by route and status, never a token or id', async () => {
  const base = billing.mcpUrl.replace(/\/mcp$/, '');
  assert.equal((await fetch(`${base}/livez`)).status, 200);
  await assertJsonError(await post(billing.mcpUrl, JSON.stringify(initialize)), 401);
  const text = await (await fetch(`${base}/metrics`)).text();
  assert.match(text, /^mesh_http_requests_total\{method="POST",route="\/mcp",status_class="4xx"\} [1-9]/m);
  assert.match(text, /^process_cpu_seconds_total/m);
  assert.doesNotMatch(text, /Bearer|acme:|INV-/);
});
