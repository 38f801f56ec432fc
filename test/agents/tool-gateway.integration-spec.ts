import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createServer, request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { HmacToolTokenMinter, McpConnection, RetryBudget, ToolMeta, type ToolCallScope } from '@mesh/tool-gateway';
import { newId } from '@mesh/contract';
import { loadBillingToolsConfig, startBillingTools } from '@mesh/app-billing-tools';
import { eventually, freshDatabase } from '../support/infra.js';
import { freePort } from '../support/processes.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import {
  everythingServer,
  ledgerDatabase,
  refundCount,
  startDynamicToolServer,
  startTestBillingTools,
  testGateway,
} from './agents-fixtures.js';
import { addDuplicateInvoice } from './runtime-fixtures.js';

const billingUrl = await freshDatabase('gateway-billing');
const billing = await startTestBillingTools(billingUrl);
const { ledger } = await ledgerDatabase('gateway-ledger');
/** The billing server as the refund agent's gateway sees it (a reconcile tool, a short timeout). */
const billingSpec = {
  transport: 'http',
  url: billing.mcpUrl,
  requestTimeoutMs: 700,
  reconcileTool: 'refund_status',
  tokenAudience: 'billing-tools',
} as const;
const gateway = testGateway({
  ledger,
  servers: { billing: { ...billingSpec, maxConcurrency: 4 }, everything: everythingServer() },
  stderr: 'ignore',
});

function scope(extra: Partial<ToolCallScope> = {}): ToolCallScope {
  const taskId = newId();
  return { tenant: 'acme', taskId, executionId: `acme:${taskId}:0`, subject: 'alice', owner: `w1#${newId()}`, ...extra };
}

const refund = { tool: 'mcp__billing__issue_refund', args: { invoice_id: 'INV-2291', amount_cents: 12900, reason: 'charged twice' } };

test('tools are listed once, namespaced, with read-only and side-effecting tools told apart', async () => {
  const tools = await gateway.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  assert.equal(byName.get('mcp__billing__get_invoice')?.safeToRepeat, true);
  assert.equal(byName.get('mcp__billing__issue_refund')?.safeToRepeat, false);
  assert.ok(byName.has('mcp__everything__echo'));
  await gateway.listTools();
  assert.equal(gateway.connection('billing').connects, 1, 'the tool list is cached, not re-fetched over a new connection');
  const inv = await gateway.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2291' } }, scope());
  assert.equal(inv.status, 'ok');
  assert.equal(inv.status === 'ok' && inv.data?.duplicate_charge, true);
  await assert.rejects(gateway.call({ tool: 'mcp__billing__nope' }, scope()), (e: { code?: string }) => e.code === 'TOOL_NOT_FOUND');
});

test('the same side-effecting call three times reaches the tool once and returns the first refund', async () => {
  const s = scope();
  const before = billing.hooks.calls('issue_refund');
  const first = await gateway.call(refund, s);
  // billing-tools serves the newest revision: the gateway's probe settles on it.
  assert.deepEqual(gateway.connection('billing').negotiated, { era: 'modern', version: '2026-07-28' });
  const second = await gateway.call(refund, { ...s, owner: 'another-attempt' });
  const third = await gateway.call(
    { tool: refund.tool, args: { reason: 'charged twice', amount_cents: 12900, invoice_id: 'INV-2291' } },
    s,
  );
  assert.equal(first.status, 'ok');
  assert.equal(first.status === 'ok' && first.replayed, false);
  assert.equal(second.status === 'ok' && second.replayed, true);
  assert.equal(third.status === 'ok' && third.replayed, true, 'argument order does not change the key');
  assert.equal(first.status === 'ok' && first.data?.refund_id, second.status === 'ok' && second.data?.refund_id);
  assert.equal(billing.hooks.calls('issue_refund') - before, 1);
  assert.equal(await refundCount(billingUrl, 'acme', 'INV-2291'), 1);
  // A different task refunding again is a different key and a real second call; the tool refuses
  // it, naming the refund that settled the invoice.
  const excess = await gateway.call(refund, scope());
  assert.equal(excess.status, 'error');
  assert.match(excess.status === 'error' ? excess.text : '', /already refunded \(refund [0-9a-f-]{36}\)/);
  assert.equal(await refundCount(billingUrl, 'acme', 'INV-2291'), 1);
});

test('a side-effecting call hanging past its timeout is unknown, not retried, and reconciled to the single refund', async () => {
  const s = { ...scope(), tenant: 'globex' };
  const args = { tool: refund.tool, args: { invoice_id: 'INV-3107', amount_cents: 25000, reason: 'charged twice' } };
  billing.hooks.delay('issue_refund', { phase: 'after-commit', ms: 5000 });
  const before = billing.hooks.calls('issue_refund');
  const obs = await gateway.call(args, s);
  assert.equal(obs.status, 'unknown');
  assert.match(obs.status === 'unknown' ? obs.reason : '', /timeout/);
  assert.equal(await ledger.countUnknown(), 1);
  // Calling again does not call the tool: the unknown stands until reconciled.
  const again = await gateway.call(args, s);
  assert.equal(again.status, 'unknown');
  assert.equal(billing.hooks.calls('issue_refund') - before, 1);
  assert.equal(await gateway.reconcileOnce(), 1);
  assert.equal(await ledger.countUnknown(), 0);
  const settled = await gateway.call(args, s);
  assert.equal(settled.status, 'ok');
  assert.equal(settled.status === 'ok' && settled.data?.invoice_id, 'INV-3107');
  assert.equal(billing.hooks.calls('issue_refund') - before, 1, 'no second call');
  assert.equal(await refundCount(billingUrl, 'globex', 'INV-3107'), 1);
});

test("the gateway's own loop settles an unknown outcome while the caller awaits it; a gateway without a reconcile tool leaves it alone", async () => {
  await addDuplicateInvoice(billingUrl, 'acme', 'INV-5150');
  const resolved: string[] = [];
  const owning = testGateway({
    ledger,
    servers: { billing: billingSpec },
    stderr: 'ignore',
    reconcile: { intervalMs: 100, onResolved: (tool, obs) => void resolved.push(`${tool}:${obs.status}`) },
  });
  // Same server, no reconcile tool (another agent's gateway on the same ledger): no loop, no settling.
  const other = testGateway({
    ledger,
    servers: { billing: { ...billingSpec, reconcileTool: undefined } },
    stderr: 'ignore',
  });
  other.start();
  billing.hooks.delay('issue_refund', { phase: 'after-commit', ms: 3000 });
  const obs = await owning.call(
    { tool: refund.tool, args: { invoice_id: 'INV-5150', amount_cents: 5000, reason: 'charged twice' } },
    scope(),
  );
  assert.equal(obs.status, 'unknown');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await ledger.get(obs.idempotencyKey))?.state, 'unknown', 'not settled before the owning loop runs');
  const waiting = owning.awaitOutcome(obs.idempotencyKey, AbortSignal.timeout(10_000));
  owning.start();
  const settled = await waiting;
  assert.equal(settled?.status, 'ok');
  assert.deepEqual(resolved, ['mcp__billing__issue_refund:ok'], 'counted once, by the loop that settled it');
  assert.equal(await other.reconcileOnce(), 0);
});

test('cancel during a slow call aborts it on the server; an unapplied side effect reconciles as absent and may run again', async () => {
  const ac = new AbortController();
  billing.hooks.delay('issue_refund', { phase: 'before', ms: 10000 });
  const abortedBefore = billing.hooks.aborted('issue_refund');
  const callsBefore = billing.hooks.calls('issue_refund');
  const s = scope({ signal: ac.signal });
  await addDuplicateInvoice(billingUrl, 'acme', 'INV-5101');
  const args = { tool: refund.tool, args: { invoice_id: 'INV-5101', amount_cents: 100, reason: 'part of the duplicate charge' } };
  const pending = gateway.call(args, s);
  await eventually('the call reached the server', () => billing.hooks.calls('issue_refund') > callsBefore);
  ac.abort(new Error('task cancelled'));
  const obs = await pending;
  assert.equal(obs.status, 'unknown', 'a cancelled side effect in flight is unknown, not failed');
  await eventually('the server saw the cancellation', () => billing.hooks.aborted('issue_refund') === abortedBefore + 1);
  assert.equal(await refundCount(billingUrl, 'acme', 'INV-5101'), 0);
  const settled = await gateway.reconcile(obs.idempotencyKey);
  assert.equal(settled?.status, 'unknown');
  assert.equal((await ledger.get(obs.idempotencyKey))?.state, 'absent');
  const retried = await gateway.call(args, { ...s, signal: undefined });
  assert.equal(retried.status, 'ok');
  assert.equal(await refundCount(billingUrl, 'acme', 'INV-5101'), 1);
});

test('a cancelled read-only call rejects with CANCELLED and leaves nothing recorded', async () => {
  const ac = new AbortController();
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 10000 });
  const callsBefore = billing.hooks.calls('get_invoice');
  const s = scope({ signal: ac.signal });
  const pending = gateway.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, s);
  await eventually('the read reached the server', () => billing.hooks.calls('get_invoice') > callsBefore);
  ac.abort(new Error('cancel'));
  await assert.rejects(pending, (e: { code?: string }) => e.code === 'CANCELLED');
  await eventually('the server saw the cancellation', () => billing.hooks.aborted('get_invoice') === 1);
  assert.equal(await ledger.countUnknown(), 0);
  billing.hooks.clear();
});

test("a turn's signal outlives its calls: they leave no listener on it (the SDK's would stay)", async () => {
  const ac = new AbortController();
  const s = scope({ signal: ac.signal });
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    for (let i = 0; i < 12; i++) {
      const read = await gateway.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, s);
      assert.equal(read.status, 'ok');
    }
    await Promise.all(
      Array.from({ length: 12 }, () => gateway.call({ tool: 'mcp__everything__echo', args: { message: 'concurrent' } }, s)),
    );
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(getEventListeners(ac.signal, 'abort').map(String), []);
  assert.deepEqual(
    warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
    [],
  );
});

test('a read-only call past the deadline is not made', async () => {
  await assert.rejects(
    gateway.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, scope({ deadline: new Date(Date.now() - 1) })),
    (e: { code?: string }) => e.code === 'DEADLINE_EXCEEDED',
  );
});

test('a reference MCP server from npm over stdio: a crash is recovered by restarting it', async () => {
  const conn = gateway.connection('everything');
  const first = await gateway.call({ tool: 'mcp__everything__echo', args: { message: 'hello' } }, scope());
  assert.equal(first.status === 'ok' && first.text, 'Echo: hello');
  const pid = conn.pid;
  assert.ok(pid);
  process.kill(pid, 'SIGKILL');
  await eventually('the connection noticed the crash', () => conn.pid === undefined);
  const second = await gateway.call({ tool: 'mcp__everything__echo', args: { message: 'again' } }, scope());
  assert.equal(second.status === 'ok' && second.text, 'Echo: again');
  assert.notEqual(conn.pid, pid);
  assert.equal(conn.connects, 2);
  assert.ok((await conn.tools()).has('echo'), 'the tool list is restored');
});

test('a server configured for tokens gets an audience-bound token (never a caller token) and refuses calls without one', async () => {
  const secret = 'billing-secret-for-tests-only';
  const guarded = await startTestBillingTools(billingUrl, { BILLING_TOKEN_SECRET: secret, BILLING_TEST_HOOKS: 'false' });
  const withToken = testGateway({
    ledger,
    tokens: new HmacToolTokenMinter(secret),
    servers: { billing: { transport: 'http', url: guarded.mcpUrl, tokenAudience: 'billing-tools' } },
  });
  const ok = await withToken.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, scope());
  assert.equal(ok.status, 'ok');
  // No tokenAudience: no bearer token on the connection, so the server refuses it (401) before any session.
  const withoutToken = testGateway({ ledger, readRetries: 0, servers: { billing: { transport: 'http', url: guarded.mcpUrl } } });
  await assert.rejects(
    withoutToken.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, scope()),
    (e: { code?: string; message?: string }) => e.code === 'TOOL_UNAVAILABLE' && /token/.test(e.message ?? ''),
  );
  const wrongSecret = testGateway({
    ledger,
    readRetries: 0,
    tokens: new HmacToolTokenMinter('a-different-secret-of-enough-length'),
    servers: { billing: { transport: 'http', url: guarded.mcpUrl, tokenAudience: 'billing-tools' } },
  });
  await assert.rejects(
    wrongSecret.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, scope()),
    (e: { code?: string; message?: string }) => e.code === 'TOOL_UNAVAILABLE' && /invalid tool token/.test(e.message ?? ''),
  );
  const misconfigured = testGateway({
    ledger,
    tokens: undefined,
    servers: { billing: { transport: 'http', url: guarded.mcpUrl, tokenAudience: 'billing-tools' } },
  });
  await assert.rejects(
    misconfigured.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2291' } }, scope()),
    (e: { code?: string }) => e.code === 'CONFIG_INVALID',
  );
});

test('a read-only call that times out is retried with backoff and succeeds; a spent budget fails it as retryable', async () => {
  const before = billing.hooks.calls('get_invoice');
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 3000, times: 1 });
  const obs = await gateway.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-3108' } }, { ...scope(), tenant: 'globex' });
  assert.equal(obs.status, 'ok');
  assert.equal(billing.hooks.calls('get_invoice') - before, 2, 'one timed-out attempt, one retry');

  billing.hooks.delay('get_invoice', { phase: 'before', ms: 3000, times: 1 });
  await assert.rejects(
    gateway.call(
      { tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-3108' } },
      { ...scope(), tenant: 'globex', budget: new RetryBudget(0) },
    ),
    (e: { code?: string; retryable?: boolean }) => e.code === 'TOOL_UNAVAILABLE' && e.retryable === true,
  );
  billing.hooks.clear();
});

/**
 * A forwarding proxy in front of `target` that leaves the first `hold` requests unanswered (a busy
 * server's slow probe) and passes the rest on.
 */
async function startHoldingProxy(target: string, hold: number): Promise<{ url: string; held: number; forwarded: number; close(): void }> {
  const to = new URL(target);
  const state = { held: 0, forwarded: 0 };
  const server = createServer((req, res) => {
    if (state.held < hold) {
      state.held++;
      return; // never answered: the client's timeout ends it
    }
    state.forwarded++;
    const up = httpRequest({ host: to.hostname, port: to.port, path: to.pathname, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  after(() => void server.close());
  return {
    url: `http://127.0.0.1:${port}${to.pathname}`,
    get held() {
      return state.held;
    },
    get forwarded() {
      return state.forwarded;
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test("a tool listing that times out (a busy server's probe) is tried again; the refund is made once; a spent budget fails it", async () => {
  const slow = await startHoldingProxy(billing.mcpUrl, 1);
  const spec = { transport: 'http' as const, url: slow.url, requestTimeoutMs: 400, tokenAudience: 'billing-tools' };
  const gw = testGateway({ ledger, servers: { billing: spec } });
  await addDuplicateInvoice(billingUrl, 'acme', 'INV-7401');
  const obs = await gw.call(
    { tool: 'mcp__billing__issue_refund', args: { invoice_id: 'INV-7401', amount_cents: 5000, reason: 'charged twice' } },
    scope(),
  );
  assert.equal(obs.status, 'ok', 'the connect was tried again after the probe timed out');
  assert.equal(slow.held, 1);
  assert.equal(await refundCount(billingUrl, 'acme', 'INV-7401'), 1);

  // No retries left in the turn's budget: the call fails as retryable, and nothing reached the tool.
  const spent = await startHoldingProxy(billing.mcpUrl, 1);
  const gw2 = testGateway({ ledger, servers: { billing: { ...spec, url: spent.url } } });
  await assert.rejects(
    gw2.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-7401' } }, { ...scope(), budget: new RetryBudget(0) }),
    (e: { code?: string; retryable?: boolean; message?: string }) =>
      e.code === 'TOOL_UNAVAILABLE' && e.retryable === true && /unavailable/.test(e.message ?? ''),
  );
  assert.equal(spent.forwarded, 0);
  slow.close();
  spent.close();
});

test("tools see the tenant from _meta: another tenant's invoice does not exist for them", async () => {
  const obs = await gateway.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-3107' } }, scope());
  assert.equal(obs.status, 'error');
  assert.match(obs.status === 'error' ? obs.text : '', /not found/);
});

test('a full server slot limit makes the next call wait instead of piling onto the server', async () => {
  const narrow = testGateway({
    ledger,
    servers: { billing: { transport: 'http', url: billing.mcpUrl, maxConcurrency: 1, tokenAudience: 'billing-tools' } },
  });
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 400, times: 1 });
  const first = narrow.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2291' } }, scope());
  await eventually('the first call holds the slot', () => narrow.slotsOf('billing').inUse === 1);
  const second = narrow.call({ tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } }, scope());
  await eventually('the second call waits for it', () => narrow.slotsOf('billing').waiting === 1);
  assert.deepEqual(
    (await Promise.all([first, second])).map((o) => o.status),
    ['ok', 'ok'],
  );
  assert.equal(narrow.slotsOf('billing').inUse, 0);
});

test('the cached tool list is dropped when the server announces list_changed', async () => {
  const dynamic = await startDynamicToolServer();
  const gw = testGateway({ ledger, servers: { dyn: { transport: 'http', url: dynamic.url } } });
  assert.deepEqual(
    (await gw.listTools()).map((t) => t.name),
    ['mcp__dyn__first'],
  );
  dynamic.addTool('second');
  await eventually('the new tool is listed', async () => (await gw.listTools()).some((t) => t.name === 'mcp__dyn__second'));
  const obs = await gw.call({ tool: 'mcp__dyn__second' }, scope());
  assert.equal(obs.status === 'ok' && obs.text, 'second');
  assert.equal(gw.connection('dyn').connects, 1, 'same connection: the list was re-fetched, not reconnected');
});

/**
 * billing-tools as a server from before 2026-07-28 shows it: `server/discover` is answered "method
 * not found" (so a negotiating client falls back to `initialize` and a session), the rest is passed on.
 */
async function olderServerFront(target: string): Promise<string> {
  const front = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const message = req.method === 'POST' ? (JSON.parse(body.toString() || 'null') as { id?: unknown; method?: string } | null) : null;
      if (message?.method === 'server/discover') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
      }
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers.set(k, v);
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      const upstream = await fetch(target, { method: req.method, headers, signal: gone.signal, ...(body.length ? { body } : {}) });
      const passed = [...upstream.headers].filter(
        ([k]) => !['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(k),
      );
      res.writeHead(upstream.status, Object.fromEntries(passed));
      if (!upstream.body) return void res.end();
      Readable.fromWeb(upstream.body as NodeReadableStream)
        .on('error', () => res.destroy())
        .pipe(res);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  after(() => {
    front.closeAllConnections();
    front.close();
  });
  return `http://127.0.0.1:${(front.address() as { port: number }).port}/mcp`;
}

test('a 2025 session the server no longer knows (404 after a restart) is replaced and the call sent once more', async () => {
  const port = await freePort();
  const start = () =>
    startBillingTools({
      ...loadBillingToolsConfig({ DATABASE_URL: billingUrl, BILLING_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET }),
      BILLING_TOOLS_PORT: port,
    });
  const first = await start();
  const olderUrl = await olderServerFront(first.mcpUrl);
  // readRetries 0: a success after the restart is the connection's own retry, not the gateway's.
  const gw = testGateway({
    ledger,
    readRetries: 0,
    servers: { billing: { transport: 'http', url: olderUrl, tokenAudience: 'billing-tools' } },
  });
  const read = { tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } };
  assert.equal((await gw.call(read, scope())).status, 'ok');
  assert.deepEqual(gw.connection('billing').negotiated, { era: 'legacy', version: '2025-11-25' });
  assert.equal(first.sessionCount(), 1);
  // The same for a bare connection: its call itself meets the 404 (no tool listing in between).
  const minter = new HmacToolTokenMinter(TEST_TOOL_TOKEN_SECRET);
  const conn = new McpConnection(
    'billing',
    { transport: 'http', url: olderUrl },
    { clientName: 'spec', bearer: () => minter.mintConnection({ audience: 'billing-tools', subject: 'spec' }) },
  );
  after(() => conn.close());
  const meta = { [ToolMeta.token]: await minter.mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't' }) };
  assert.equal((await conn.callTool('get_invoice', { invoice_id: 'INV-2292' }, meta, { timeoutMs: 5000 })).isError, undefined);
  await first.stop();
  const second = await start();
  after(() => second.stop());
  const again = await gw.call(read, scope());
  assert.equal(again.status, 'ok');
  assert.equal(gw.connection('billing').connects, 2, 'one new session');
  assert.equal((await conn.callTool('get_invoice', { invoice_id: 'INV-2292' }, meta, { timeoutMs: 5000 })).isError, undefined);
  assert.equal(conn.connects, 2);
});

test('on 2026-07-28 a restarted server needs no new connection: there is no session to lose', async () => {
  const port = await freePort();
  const start = () =>
    startBillingTools({
      ...loadBillingToolsConfig({ DATABASE_URL: billingUrl, BILLING_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET }),
      BILLING_TOOLS_PORT: port,
    });
  const first = await start();
  const gw = testGateway({
    ledger,
    readRetries: 0,
    servers: { billing: { transport: 'http', url: first.mcpUrl, tokenAudience: 'billing-tools' } },
  });
  const read = { tool: 'mcp__billing__get_invoice', args: { invoice_id: 'INV-2292' } };
  assert.equal((await gw.call(read, scope())).status, 'ok');
  assert.deepEqual(gw.connection('billing').negotiated, { era: 'modern', version: '2026-07-28' });
  assert.equal(first.sessionCount(), 0, 'stateless: nothing held between requests');
  await first.stop();
  const second = await start();
  after(() => second.stop());
  assert.equal((await gw.call(read, scope())).status, 'ok');
  assert.equal(gw.connection('billing').connects, 1);
});
