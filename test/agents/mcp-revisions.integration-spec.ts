import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { newId } from '@mesh/contract';
import { ToolMeta, verifyToolToken, type NegotiatedProtocol, type ToolCallScope, type ToolGateway } from '@mesh/tool-gateway';
import type { McpServerSpec } from '@mesh/agent-sdk';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { eventually } from '../support/infra.js';
import { freePort, spawnNode } from '../support/processes.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { ledgerDatabase, testGateway } from './agents-fixtures.js';
import type { NoteBook } from './note-book.js';
import { startLegacyNoteServer, startNextNoteServer } from './note-servers.js';

// The gateway against tool servers of both MCP revisions: a 1.32 server (2025-11-25 only), 2.x
// servers in the SDK's default mode (both revisions) and strict (2026-07-28 only), and the
// reference server-everything, over Streamable HTTP and stdio. The same ledger guarantees hold on each.

const { ledger } = await ledgerDatabase('mcp-revisions-ledger');
const MODERN: NegotiatedProtocol = { era: 'modern', version: '2026-07-28' };
const LEGACY: NegotiatedProtocol = { era: 'legacy', version: '2025-11-25' };
const stdioScript = fileURLToPath(new URL('./next-note-server-stdio.js', import.meta.url));

function scope(extra: Partial<ToolCallScope> = {}): ToolCallScope {
  const taskId = newId();
  return { tenant: 'acme', taskId, executionId: `acme:${taskId}:0`, subject: 'alice', owner: `w1#${newId()}`, ...extra };
}

interface NotePairing {
  label: string;
  expected: NegotiatedProtocol;
  spec: () => Promise<{ spec: McpServerSpec; book?: NoteBook }>;
}

const http = async (start: () => Promise<{ url: string; book: NoteBook }>) => {
  const s = await start();
  return { spec: { transport: 'http', url: s.url, tokenAudience: 'notes' } as McpServerSpec, book: s.book };
};
const stdio = (mode: 'serve' | 'strict') => () =>
  Promise.resolve({
    spec: { transport: 'stdio', command: process.execPath, args: [stdioScript, mode], tokenAudience: 'notes' } as McpServerSpec,
  });

const pairings: NotePairing[] = [
  { label: '1.32 server over HTTP', expected: LEGACY, spec: () => http(() => startLegacyNoteServer()) },
  { label: '2.x default server over HTTP', expected: MODERN, spec: () => http(() => startNextNoteServer({ legacy: 'stateless' })) },
  { label: '2.x strict server over HTTP', expected: MODERN, spec: () => http(() => startNextNoteServer({ legacy: 'reject' })) },
  { label: '2.x default server over stdio', expected: MODERN, spec: stdio('serve') },
  { label: '2.x strict server over stdio', expected: MODERN, spec: stdio('strict') },
];

for (const p of pairings) {
  test(`${p.label}: negotiates ${p.expected.version}; tools listed in one shape; a side effect runs once across redelivery`, async () => {
    const { spec, book } = await p.spec();
    const gw = testGateway({ ledger, servers: { notes: spec }, stderr: 'ignore' });
    const tools = new Map((await gw.listTools()).map((t) => [t.name, t]));
    assert.deepEqual(gw.connection('notes').negotiated, p.expected);
    assert.equal(tools.get('mcp__notes__get_note')?.safeToRepeat, true);
    assert.equal(tools.get('mcp__notes__add_note')?.safeToRepeat, false);
    const schema = tools.get('mcp__notes__add_note')!.inputSchema;
    // One dialect whichever the server used (2.x sends 2020-12): draft-07 without `$schema`.
    assert.equal(schema.$schema, undefined);
    assert.equal(schema.type, 'object');
    assert.deepEqual(Object.keys(schema.properties as object).sort(), ['delay_ms', 'id', 'text']);

    const s = scope();
    const add = { tool: 'mcp__notes__add_note', args: { id: `n-${newId()}`, text: 'hello' } };
    const first = await gw.call(add, s);
    assert.deepEqual(first.status === 'ok' && { data: first.data, replayed: first.replayed }, {
      data: { id: add.args.id, added: 1 },
      replayed: false,
    });
    // Redelivery: another attempt of the same task makes the same call; the ledger answers it.
    const again = await gw.call(add, { ...s, owner: 'another-attempt' });
    assert.equal(again.status === 'ok' && again.replayed, true);
    assert.deepEqual(again.status === 'ok' && again.data, { id: add.args.id, added: 1 });
    assert.equal((await ledger.get(first.idempotencyKey))?.state, 'ok');
    const read = await gw.call({ tool: 'mcp__notes__get_note', args: { id: add.args.id } }, scope());
    assert.equal(read.status === 'ok' && read.text, 'hello');
    assert.deepEqual(Object.keys(read.status === 'ok' ? read : {}).sort(), [
      'data',
      'idempotencyKey',
      'replayed',
      'status',
      'text',
      'tool',
    ]);
    if (book) {
      assert.equal(book.calls('add_note'), 1, 'the redelivered call did not reach the server');
      // Tool tokens and the idempotency key travel in `_meta` on either revision.
      const meta = book.lastMeta.get('add_note')!;
      assert.equal(meta[ToolMeta.idempotencyKey], first.idempotencyKey);
      assert.deepEqual(await verifyToolToken(meta[ToolMeta.token] as string, TEST_TOOL_TOKEN_SECRET, 'notes'), {
        tenant: 'acme',
        subject: 'alice',
        taskId: s.taskId,
      });
    }
  });

  test(`${p.label}: a side effect past its timeout is unknown and not sent again`, async () => {
    const { spec, book } = await p.spec();
    const gw = testGateway({ ledger, servers: { notes: { ...spec, requestTimeoutMs: 1500 } }, stderr: 'ignore' });
    const s = scope();
    const add = { tool: 'mcp__notes__add_note', args: { id: `n-${newId()}`, text: 'slow', delay_ms: 4000 } };
    const obs = await gw.call(add, s);
    assert.equal(obs.status, 'unknown');
    assert.match(obs.status === 'unknown' ? obs.reason : '', /^timeout/);
    const again = await gw.call(add, { ...s, owner: 'another-attempt' });
    assert.equal(again.status, 'unknown');
    assert.equal((await ledger.get(obs.idempotencyKey))?.state, 'unknown');
    if (book) assert.equal(book.calls('add_note'), 1);
  });
}

for (const p of pairings.filter((x) => x.label.includes('HTTP'))) {
  test(`${p.label}: cancelling a call in flight cancels it on the server`, async () => {
    const { spec, book } = await p.spec();
    const gw = testGateway({ ledger, servers: { notes: spec } });
    book!.delay('add_note', 10000);
    const ac = new AbortController();
    const pending = gw.call({ tool: 'mcp__notes__add_note', args: { id: `n-${newId()}`, text: 'x' } }, scope({ signal: ac.signal }));
    await eventually('the call reached the server', () => book!.calls('add_note') === 1);
    ac.abort(new Error('task cancelled'));
    assert.equal((await pending).status, 'unknown');
    await eventually('the server saw the cancellation', () => book!.aborted('add_note') === 1);
  });
}

test('the 1.32 client cannot connect to a strict server: why the gateway negotiates', async () => {
  const server = await startNextNoteServer({ legacy: 'reject' });
  const client = new LegacyClient({ name: 'old', version: '1' });
  await assert.rejects(client.connect(new LegacyHttpTransport(new URL(server.url))), /Unsupported protocol version/);
  await client.close();
});

const guarded = [
  { label: '1.32 server', expected: LEGACY, start: () => startLegacyNoteServer({ bearer: 's3cret' }) },
  { label: '2.x default server', expected: MODERN, start: () => startNextNoteServer({ legacy: 'stateless', bearer: 's3cret' }) },
  { label: '2.x strict server', expected: MODERN, start: () => startNextNoteServer({ legacy: 'reject', bearer: 's3cret' }) },
];

for (const g of guarded) {
  test(`${g.label}: a 401 on the probe is an error, not a verdict of "older server"`, async () => {
    const server = await g.start();
    const gw = testGateway({ ledger, readRetries: 0, servers: { notes: { transport: 'http', url: server.url } } });
    const read = { tool: 'mcp__notes__get_note', args: { id: 'n-1' } };
    await assert.rejects(gw.call(read, scope()), (e: { code?: string; message?: string }) => {
      assert.equal(e.code, 'TOOL_UNAVAILABLE');
      assert.match(e.message ?? '', /401/);
      return true;
    });
    assert.equal(gw.connection('notes').negotiated, undefined);
    server.requireBearer = false;
    assert.equal((await gw.call(read, scope())).status, 'ok');
    assert.deepEqual(gw.connection('notes').negotiated, g.expected);
  });
}

test('an "older server" verdict is re-checked on schedule: a server upgraded behind its URL is then spoken to in 2026-07-28', async () => {
  const server = await startNextNoteServer({ legacy: 'stateless' });
  server.discoverable = false;
  const gw = testGateway({ ledger, legacyRecheckMs: 300, servers: { notes: { transport: 'http', url: server.url } } });
  const read = { tool: 'mcp__notes__get_note', args: { id: 'n-1' } };
  assert.equal((await gw.call(read, scope())).status, 'ok');
  assert.deepEqual(gw.connection('notes').negotiated, LEGACY);
  // Within the interval the verdict stands: no second probe, no new connection.
  server.discoverable = true;
  assert.equal((await gw.call(read, scope())).status, 'ok');
  assert.equal(gw.connection('notes').connects, 1);
  await new Promise((r) => setTimeout(r, 350));
  assert.equal((await gw.call(read, scope())).status, 'ok', 'the call is not held up by the re-check');
  await eventually('the re-check switched revisions', () => gw.connection('notes').negotiated?.era === 'modern');
  assert.equal(gw.connection('notes').connects, 2);
  assert.equal((await gw.call(read, scope())).status, 'ok');
});

// server-everything (the reference server, on the 1.x SDK): echo reads; toggle-simulated-logging
// is its one tool without read-only or idempotent hints, so the gateway treats it as a side effect.
const everythingEntry = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');

async function everythingOverHttp(): Promise<McpServerSpec> {
  const port = await freePort();
  const proc = spawnNode(everythingEntry, { PORT: String(port) }, ['streamableHttp']);
  await eventually('server-everything listens', () => proc.stderr().includes(`listening on port ${port}`));
  return { transport: 'http', url: `http://127.0.0.1:${port}/mcp`, requestTimeoutMs: 1500 };
}

const everything = [
  {
    label: 'over stdio',
    spec: () =>
      Promise.resolve<McpServerSpec>({
        transport: 'stdio',
        command: process.execPath,
        args: [everythingEntry, 'stdio'],
        requestTimeoutMs: 1500,
      }),
  },
  { label: 'over HTTP', spec: everythingOverHttp },
];

for (const e of everything) {
  test(`server-everything ${e.label}: negotiates 2025-11-25; echo, a side effect once, a slow read fails retryable`, async () => {
    const gw: ToolGateway = testGateway({ ledger, readRetries: 0, servers: { everything: await e.spec() }, stderr: 'ignore' });
    const tools = new Map((await gw.listTools()).map((t) => [t.name, t]));
    assert.deepEqual(gw.connection('everything').negotiated, LEGACY);
    assert.equal(tools.get('mcp__everything__echo')?.safeToRepeat, true);
    assert.equal(tools.get('mcp__everything__toggle-simulated-logging')?.safeToRepeat, false);
    const echo = await gw.call({ tool: 'mcp__everything__echo', args: { message: 'hi' } }, scope());
    assert.equal(echo.status === 'ok' && echo.text, 'Echo: hi');

    const s = scope();
    const toggle = { tool: 'mcp__everything__toggle-simulated-logging' };
    const first = await gw.call(toggle, s);
    assert.equal(first.status, 'ok');
    const again = await gw.call(toggle, { ...s, owner: 'another-attempt' });
    assert.equal(again.status === 'ok' && again.replayed, true);
    assert.equal(again.status === 'ok' && again.text, first.status === 'ok' && first.text, 'the toggle was not flipped back');

    // Its slow tool is read-only: a timeout is no unknown effect, it fails retryable and leaves nothing recorded.
    const unknownBefore = await ledger.countUnknown();
    const slow = { tool: 'mcp__everything__trigger-long-running-operation', args: { duration: 5, steps: 5 } };
    await assert.rejects(gw.call(slow, scope()), (err: { code?: string; retryable?: boolean }) => {
      assert.equal(err.code, 'TOOL_UNAVAILABLE');
      assert.equal(err.retryable, true);
      return true;
    });
    assert.equal(await ledger.countUnknown(), unknownBefore);
  });
}
