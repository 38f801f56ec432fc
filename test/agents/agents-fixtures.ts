import { after } from 'node:test';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { openServiceDatabase } from '@mesh/database';
import { agentsMigrations, AGENTS_SCHEMA } from '@mesh/agent-runtime';
import { loadBillingToolsConfig, startBillingTools, type RunningBillingTools } from '@mesh/app-billing-tools';
import { HmacToolTokenMinter, PostgresEffectLedger, ToolGateway, type ToolGatewayOptions } from '@mesh/tool-gateway';
import type { McpServerSpec } from '@mesh/agent-sdk';
import { freshDatabase, sql } from '../support/infra.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';

/** billing-tools on a free port with test hooks on and the test tool-token secret, stopped when the spec ends. */
export async function startTestBillingTools(databaseUrl: string, env: Record<string, string> = {}): Promise<RunningBillingTools> {
  const billing = await startBillingTools({
    ...loadBillingToolsConfig({
      DATABASE_URL: databaseUrl,
      BILLING_TEST_HOOKS: 'true',
      BILLING_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
      ...env,
    }),
    BILLING_TOOLS_PORT: 0,
  });
  after(() => billing.stop());
  return billing;
}

/** A fresh database with the agents schema migrated, plus its effect ledger. */
export async function ledgerDatabase(label: string): Promise<{ url: string; ledger: PostgresEffectLedger; close: () => Promise<void> }> {
  const url = await freshDatabase(label);
  const ds = await openServiceDatabase({ url, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations, poolSize: 4 });
  after(() => ds.destroy());
  return { url, ledger: new PostgresEffectLedger(ds), close: () => ds.destroy() };
}

/** A gateway over the given servers, closed when the spec ends. */
export function testGateway(opts: Partial<ToolGatewayOptions> & Pick<ToolGatewayOptions, 'servers' | 'ledger'>): ToolGateway {
  const gw = new ToolGateway({
    clientName: 'test-worker',
    retryBaseMs: 20,
    tokens: new HmacToolTokenMinter(TEST_TOOL_TOKEN_SECRET),
    ...opts,
  });
  after(() => gw.close());
  return gw;
}

/** The reference MCP server from the npm registry, over stdio. */
export function everythingServer(): McpServerSpec {
  const entry = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
  return { transport: 'stdio', command: process.execPath, args: [entry, 'stdio'], requestTimeoutMs: 10000 };
}

/** Rows in billing-tools' refunds table for an invoice. */
export async function refundCount(url: string, tenant: string, invoiceId: string): Promise<number> {
  const rows = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM billing.refunds WHERE tenant = $1 AND invoice_id = $2`, [
    tenant,
    invoiceId,
  ]);
  return rows[0].n;
}

/**
 * Express handler of a 1.32 SDK server over Streamable HTTP with sessions: a request without a
 * known `mcp-session-id` opens a session on a new server from `newServer`.
 */
export function sessionHandler(newServer: () => McpServer): (req: express.Request, res: express.Response) => Promise<void> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  return async (req, res) => {
    const sid = req.header('mcp-session-id');
    let t = sid ? sessions.get(sid) : undefined;
    if (!t) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      await newServer().connect(created);
      t = created;
    }
    await t.handleRequest(req, res, req.body);
  };
}

/** An MCP server over Streamable HTTP whose tool list can grow while clients are connected. */
export async function startDynamicToolServer(): Promise<{ url: string; addTool(name: string): void }> {
  const servers: McpServer[] = [];
  const app = express();
  app.use(express.json());
  const newServer = () => {
    const s = new McpServer({ name: 'dynamic', version: '0.0.1' });
    s.registerTool('first', { description: 'always there', annotations: { readOnlyHint: true } }, async () => ({
      content: [{ type: 'text', text: 'first' }],
    }));
    servers.push(s);
    return s;
  };
  const handle = sessionHandler(newServer);
  app.post('/mcp', handle);
  app.get('/mcp', handle);
  const srv: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  after(() => {
    srv.closeAllConnections();
    srv.close();
  });
  return {
    url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/mcp`,
    addTool(name) {
      // Registering on a connected server sends notifications/tools/list_changed to its client.
      for (const s of servers)
        s.registerTool(name, { annotations: { readOnlyHint: true } }, async () => ({ content: [{ type: 'text', text: name }] }));
    },
  };
}
