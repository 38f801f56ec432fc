import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import { bearerToken } from '@mesh/contract';
import { openServiceDatabase } from '@mesh/database';
import {
  closeUnreadBodies,
  countRequests,
  deferContinue,
  hasBody,
  limitRequestTimes,
  refuseMalformedUtf8,
  serveInOrder,
  withinBodyLimit,
} from '@mesh/service';
import { MeshMetrics } from '@mesh/telemetry';
import { BillingHooks } from './billing-hooks.js';
import { billingTokenVerifier, type BillingToolsConfig } from './billing-tools.config.js';
import { createBillingServer } from './billing-tools.server.js';
import { BillingStore } from './billing.store.js';
import { billingMigrations, BILLING_SCHEMA } from './migrations/index.js';
import { sendWebResponse, toWebRequest } from './web-exchange.js';

/** A running billing-tools server. */
export interface RunningBillingTools {
  /** MCP endpoint (Streamable HTTP), e.g. http://127.0.0.1:8083/mcp */
  mcpUrl: string;
  hooks: BillingHooks;
  /** MCP sessions (of 2025-revision clients) open now. */
  sessionCount(): number;
  stop(): Promise<void>;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  /** Requests (and SSE streams) of the session still open. */
  open: number;
  lastUsed: number;
}

/** Every error answer is a JSON-RPC error object: never an HTML page, never a stack trace. */
const rpcError = (res: Response, status: number, code: number, message: string) =>
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });

/** The body parser's refusals (by its `type`), as JSON-RPC answers. */
function bodyError(err: { type?: string; status?: number }): { status: number; code: number; message: string } {
  switch (err.type) {
    case 'entity.parse.failed':
      return { status: 400, code: -32700, message: 'Parse error: the request body is not valid JSON' };
    case 'entity.too.large':
      return { status: 413, code: -32600, message: 'request body too large (limit 1 MB)' };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { status: 415, code: -32600, message: 'unsupported content encoding or charset' };
    default:
      return typeof err.status === 'number' && err.status >= 400 && err.status < 500
        ? { status: err.status, code: -32600, message: 'invalid request' }
        : { status: 500, code: -32603, message: 'internal error' };
  }
}

/** The largest MCP request body (1 MiB). */
const BODY_LIMIT_BYTES = 1024 * 1024;

type AuthedRequest = Request & { auth?: AuthInfo };

/**
 * Starts billing-tools: its schema (created and migrated), then MCP over Streamable HTTP on one
 * path for both protocol revisions: 2026-07-28 requests are stateless (a server instance per
 * request), 2025 clients get one session each. Every request needs a tool token for
 * BILLING_TOKEN_AUDIENCE (401 before any session or server instance exists otherwise); sessions
 * are capped and closed when idle.
 */
export async function startBillingTools(config: BillingToolsConfig): Promise<RunningBillingTools> {
  const ds = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: BILLING_SCHEMA,
    entities: [],
    migrations: billingMigrations,
    poolSize: 5,
  });
  const store = new BillingStore(ds);
  const hooks = new BillingHooks(config.BILLING_TEST_HOOKS);
  const token = billingTokenVerifier(config);
  const sessions = new Map<string, Session>();
  let initializing = 0;
  const deps = { store, hooks, token };
  // Strict: the 2025 revisions are served below, with sessions, not by the SDK's stateless fallback.
  const modern = createMcpHandler(() => createBillingServer(deps), { legacy: 'reject' });

  const metrics = new MeshMetrics();
  const app = express();
  app.disable('x-powered-by');
  app.use(serveInOrder());
  app.use(closeUnreadBodies());
  app.use(countRequests(metrics));
  // The same probes and metrics as every service: liveness answers while the process runs.
  app.get('/livez', (_req, res) => void res.json({ status: 'alive' }));
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.get('/healthz', async (_req, res) => {
    try {
      await ds.query('SELECT 1');
      res.json({ status: 'ok' });
    } catch {
      res.status(503).json({ status: 'broken', error: 'database unreachable' });
    }
  });

  // Authentication first: no session, no body parsing, nothing stored for a request without a valid token.
  app.use('/mcp', async (req: Request, res: Response, next: NextFunction) => {
    // A refused request's body is never read: its connection closes after the answer.
    const refuse = (message: string) => {
      if (hasBody(req)) res.setHeader('Connection', 'close');
      rpcError(res, 401, -32001, message);
    };
    const bearer = bearerToken(req.header('authorization'));
    if (!bearer) return refuse(`a tool token is required: Authorization: Bearer <token for ${token.audience}>`);
    try {
      const claims = await token.claims(bearer);
      const auth: AuthInfo = { token: bearer, clientId: claims.subject, scopes: [], extra: { ...claims } };
      (req as AuthedRequest).auth = auth;
    } catch {
      return refuse(`invalid tool token (signature, issuer, audience ${token.audience} or expiry)`);
    }
    next();
  });
  app.use('/mcp', withinBodyLimit(express.json({ limit: BODY_LIMIT_BYTES, verify: refuseMalformedUtf8 }), BODY_LIMIT_BYTES));

  /** Counts a request against its session from start to end, so a session is idle only with nothing open. */
  const track = (s: Session, res: Response) => {
    s.open++;
    s.lastUsed = Date.now();
    res.once('close', () => {
      s.open--;
      s.lastUsed = Date.now();
    });
  };

  /** Hands the request to a 2025 session's transport, with the verified token and the parsed body. */
  const serveOnSession = async (
    transport: WebStandardStreamableHTTPServerTransport,
    req: Request,
    res: Response,
    request = toWebRequest(req, res),
  ) => {
    const options = { authInfo: (req as AuthedRequest).auth, ...(req.method === 'POST' ? { parsedBody: req.body } : {}) };
    await sendWebResponse(res, await transport.handleRequest(request, options));
  };

  app.post('/mcp', async (req: Request, res: Response) => {
    // The SDK's own classification: a request carrying the 2026-07-28 envelope is served statelessly.
    const request = toWebRequest(req, res);
    if (!(await isLegacyRequest(request, req.body))) {
      const authInfo = (req as AuthedRequest).auth;
      return void (await sendWebResponse(res, await modern.fetch(request, { authInfo, parsedBody: req.body })));
    }
    const sid = req.header('mcp-session-id');
    const known = sid ? sessions.get(sid) : undefined;
    if (known) {
      track(known, res);
      return void (await serveOnSession(known.transport, req, res, request));
    }
    // An unknown session (expired, or after a restart) gets 404, which tells the client to initialise again.
    if (sid) return void rpcError(res, 404, -32001, 'unknown session');
    if (!isInitializeRequest(req.body)) return void rpcError(res, 400, -32600, 'no session: send initialize first');
    if (sessions.size + initializing >= config.BILLING_TOOLS_MAX_SESSIONS) {
      res.setHeader('retry-after', String(Math.ceil(Math.min(config.BILLING_TOOLS_SESSION_IDLE_MS, 60_000) / 1000)));
      return void rpcError(res, 503, -32000, `too many open sessions (${config.BILLING_TOOLS_MAX_SESSIONS}); retry later`);
    }
    initializing++;
    const session: Session = { transport: undefined as never, open: 0, lastUsed: Date.now() };
    const t: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, session),
    });
    session.transport = t;
    t.onclose = () => {
      if (t.sessionId) sessions.delete(t.sessionId);
    };
    try {
      await createBillingServer(deps).connect(t);
      track(session, res);
      await serveOnSession(t, req, res, request);
    } finally {
      initializing--;
    }
  });
  const sessionRequest = async (req: Request, res: Response) => {
    const s = sessions.get(req.header('mcp-session-id') ?? '');
    if (!s) return void rpcError(res, 404, -32001, 'unknown session');
    track(s, res);
    await serveOnSession(s.transport, req, res);
  };
  app.get('/mcp', sessionRequest);
  app.delete('/mcp', sessionRequest);
  app.use((_req: Request, res: Response) => rpcError(res, 404, -32601, 'not found: the MCP endpoint is /mcp'));
  app.use((err: { type?: string; status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    const e = bodyError(err);
    if (res.headersSent) return void res.end();
    rpcError(res, e.status, e.code, e.message);
  });

  // Sessions a client walked away from (no request, no open stream) are closed after the idle time.
  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - config.BILLING_TOOLS_SESSION_IDLE_MS;
      for (const s of sessions.values()) if (s.open === 0 && s.lastUsed < cutoff) void s.transport.close().catch(() => undefined);
    },
    Math.max(50, Math.min(config.BILLING_TOOLS_SESSION_IDLE_MS / 4, 30_000)),
  );
  sweep.unref();

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.BILLING_TOOLS_PORT, config.HTTP_HOST, () => resolve(s));
    deferContinue(s);
    limitRequestTimes(s);
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.BILLING_TOOLS_PORT;
  const wildcard = config.HTTP_HOST === '0.0.0.0' || config.HTTP_HOST === '::';
  const host = wildcard ? '127.0.0.1' : config.HTTP_HOST.includes(':') ? `[${config.HTTP_HOST}]` : config.HTTP_HOST;
  return {
    mcpUrl: `http://${host}:${port}/mcp`,
    hooks,
    sessionCount: () => sessions.size,
    async stop() {
      clearInterval(sweep);
      await modern.close();
      await Promise.all([...sessions.values()].map((s) => s.transport.close().catch(() => undefined)));
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await ds.destroy();
    },
  };
}
