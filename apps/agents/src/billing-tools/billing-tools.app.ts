import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express, { type Request, type Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { openServiceDatabase } from '@mesh/database';
import { BillingHooks } from './billing-hooks.js';
import type { BillingToolsConfig } from './billing-tools.config.js';
import { createBillingServer } from './billing-tools.server.js';
import { BillingStore } from './billing.store.js';
import { billingMigrations, BILLING_SCHEMA } from './migrations/index.js';

/** A running billing-tools server. */
export interface RunningBillingTools {
  /** MCP endpoint (Streamable HTTP), e.g. http://127.0.0.1:8083/mcp */
  mcpUrl: string;
  hooks: BillingHooks;
  stop(): Promise<void>;
}

const rpcError = (res: Response, status: number, message: string) =>
  res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });

/** Starts billing-tools: its schema (created and migrated), then MCP over Streamable HTTP with one session per client. */
export async function startBillingTools(config: BillingToolsConfig, opts: { host?: string } = {}): Promise<RunningBillingTools> {
  const ds = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: BILLING_SCHEMA,
    entities: [],
    migrations: billingMigrations,
    poolSize: 5,
  });
  const store = new BillingStore(ds);
  const hooks = new BillingHooks(config.BILLING_TEST_HOOKS);
  const token = config.BILLING_TOKEN_SECRET ? { secret: config.BILLING_TOKEN_SECRET, audience: config.BILLING_TOKEN_AUDIENCE } : undefined;
  const sessions = new Map<string, StreamableHTTPServerTransport>();

  const app = express();
  app.use(express.json({ limit: '1mb' }));
  app.get('/healthz', async (_req, res) => {
    try {
      await ds.query('SELECT 1');
      res.json({ status: 'ok' });
    } catch (err) {
      res.status(503).json({ status: 'broken', error: String(err) });
    }
  });
  app.post('/mcp', async (req: Request, res: Response) => {
    const sid = req.header('mcp-session-id');
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      // An unknown session (e.g. after a restart) gets 404, which tells the client to initialise again.
      if (sid) return void rpcError(res, 404, 'unknown session');
      if (!isInitializeRequest(req.body)) return void rpcError(res, 400, 'no session: send initialize first');
      const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, t),
      });
      t.onclose = () => {
        if (t.sessionId) sessions.delete(t.sessionId);
      };
      await createBillingServer({ store, hooks, token }).connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res, req.body);
  });
  const sessionRequest = async (req: Request, res: Response) => {
    const transport = sessions.get(req.header('mcp-session-id') ?? '');
    if (!transport) return void rpcError(res, 404, 'unknown session');
    await transport.handleRequest(req, res);
  };
  app.get('/mcp', sessionRequest);
  app.delete('/mcp', sessionRequest);

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.BILLING_TOOLS_PORT, opts.host ?? '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.BILLING_TOOLS_PORT;
  return {
    mcpUrl: `http://127.0.0.1:${port}/mcp`,
    hooks,
    async stop() {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => undefined)));
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await ds.destroy();
    },
  };
}
