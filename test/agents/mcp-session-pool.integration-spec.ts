import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { newId } from '@mesh/contract';
import { McpSessionPool, type ToolCallScope } from '@mesh/tool-gateway';
import { ledgerDatabase, testGateway } from './agents-fixtures.js';

// The pool of MCP sessions per server (`sessions`) against a 1.32 server with sessions: calls are
// spread over the sessions, and a session that dies or that the server forgets is replaced on its
// own while the others keep theirs.

const { ledger } = await ledgerDatabase('mcp-session-pool-ledger');

function scope(): ToolCallScope {
  const taskId = newId();
  return { tenant: 'acme', taskId, executionId: `acme:${taskId}:0`, subject: 'alice', owner: `w1#${newId()}` };
}

interface PoolServer {
  url: string;
  /** Session id of every `whoami` call, in order. */
  calls: string[];
  /** Sessions opened so far. */
  opened: string[];
  /** Drops a session as a restarted server would: its next request is answered 404. */
  forget(id: string): void;
  /** Cuts the connection of the next request of this session without an answer. */
  cut(id: string): void;
}

/** A 1.32 server whose one tool answers with the session it ran in. */
async function startPoolServer(): Promise<PoolServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const toCut = new Set<string>();
  const running: PoolServer = {
    url: '',
    calls: [],
    opened: [],
    forget: (id) => void sessions.delete(id),
    cut: (id) => void toCut.add(id),
  };
  const app = express();
  app.use(express.json());
  app.all('/mcp', async (req, res) => {
    const sid = req.header('mcp-session-id');
    if (sid && toCut.delete(sid)) return void req.socket.destroy();
    let t = sid ? sessions.get(sid) : undefined;
    if (!t) {
      if (sid || req.method !== 'POST' || !isInitializeRequest(req.body))
        return void res.status(404).json({ jsonrpc: '2.0', error: { code: -32001, message: 'unknown session' }, id: null });
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => {
          sessions.set(id, created);
          running.opened.push(id);
        },
      });
      const server = new McpServer({ name: 'pool', version: '0.0.1' });
      server.registerTool(
        'whoami',
        { description: 'the session id', inputSchema: { n: z.number() }, annotations: { readOnlyHint: true } },
        async (_args, extra) => {
          running.calls.push(extra.sessionId ?? '');
          return { content: [{ type: 'text', text: extra.sessionId ?? '' }] };
        },
      );
      await server.connect(created);
      t = created;
    }
    await t.handleRequest(req, res, req.body);
  });
  const srv: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  after(() => {
    srv.closeAllConnections();
    srv.close();
  });
  running.url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/mcp`;
  return running;
}

const count = (ids: string[]) => ids.reduce((m, id) => m.set(id, (m.get(id) ?? 0) + 1), new Map<string, number>());

test('calls are spread over the configured sessions in turn', async () => {
  const server = await startPoolServer();
  const gw = testGateway({ ledger, servers: { pool: { transport: 'http', url: server.url, sessions: 3 } } });
  const obs = await Promise.all(Array.from({ length: 9 }, (_, n) => gw.call({ tool: 'mcp__pool__whoami', args: { n } }, scope())));
  assert.deepEqual(
    obs.map((o) => o.status),
    Array(9).fill('ok'),
  );
  assert.equal(server.opened.length, 3);
  assert.deepEqual([...count(server.calls).values()], [3, 3, 3]);
  assert.equal(gw.connection('pool').connects, 3);
});

test('a session the server forgot (404) is re-initialised alone; the others keep theirs', async () => {
  const server = await startPoolServer();
  const pool = new McpSessionPool('pool', { transport: 'http', url: server.url, sessions: 3 }, { clientName: 'spec' });
  after(() => pool.close());
  const call = (n: number) => pool.callTool('whoami', { n }, {}, { timeoutMs: 5000 });
  for (let n = 0; n < 3; n++) await call(n);
  const [a, b, c] = server.calls;
  server.forget(b!);
  for (let n = 3; n < 6; n++) assert.notEqual((await call(n)).isError, true);
  assert.equal(server.opened.length, 4, 'one new session');
  const renewed = server.opened[3]!;
  assert.deepEqual(server.calls.slice(3), [a, renewed, c]);
  assert.equal(pool.connects, 4);
});

test('a session whose connection died is replaced on its next turn; the others keep theirs', async () => {
  const server = await startPoolServer();
  const pool = new McpSessionPool('pool', { transport: 'http', url: server.url, sessions: 2 }, { clientName: 'spec' });
  after(() => pool.close());
  const call = (n: number) => pool.callTool('whoami', { n }, {}, { timeoutMs: 5000 });
  await call(0);
  await call(1);
  const [a, b] = server.calls;
  server.cut(a!);
  await assert.rejects(call(2), 'the call whose connection was cut fails: the pool never resends a call that may have arrived');
  assert.equal((await call(3)).isError, undefined);
  assert.equal((await call(4)).isError, undefined);
  assert.equal(server.opened.length, 3, 'one new session');
  assert.deepEqual(server.calls.slice(2), [b, server.opened[2]]);
  assert.equal(pool.connects, 3);
});

test('stdio servers keep one session; a bad `sessions` (say, from AGENTS_MCP_SERVERS) is refused', () => {
  const pool = new McpSessionPool('pool', { transport: 'stdio', command: process.execPath }, { clientName: 'spec' });
  assert.equal(pool.sessions.length, 1);
  for (const sessions of [0, 2.5, 100])
    assert.throws(
      () => new McpSessionPool('pool', { transport: 'http', url: 'http://127.0.0.1:1/mcp', sessions }, { clientName: 'spec' }),
      (e: { code?: string; message?: string }) =>
        e.code === 'CONFIG_INVALID' && /sessions must be an integer from 1 to 64/.test(e.message ?? ''),
    );
});
