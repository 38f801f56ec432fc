import { after } from 'node:test';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import express from 'express';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { legacyNoteServer, nextNoteServer, NoteBook } from './note-book.js';
import { sessionHandler } from './agents-fixtures.js';

export interface NoteServerOptions {
  /** Requests without `Authorization: Bearer <token>` are refused with 401 before MCP sees them. */
  bearer?: string;
}

export interface RunningNoteServer {
  url: string;
  book: NoteBook;
  /** Whether requests must carry the bearer token (switchable). */
  requireBearer: boolean;
}

/** A 1.32 server over Streamable HTTP with sessions (2025-11-25 only). */
export async function startLegacyNoteServer(opts: NoteServerOptions = {}): Promise<RunningNoteServer> {
  const book = new NoteBook();
  const running: RunningNoteServer = { url: '', book, requireBearer: opts.bearer !== undefined };
  const app = express();
  app.use((req, res, next) => (refused(running, opts, req.headers.authorization) ? unauthorized(res) : next()));
  app.use(express.json());
  const handle = sessionHandler(() => legacyNoteServer(book));
  app.post('/mcp', handle);
  app.get('/mcp', handle);
  app.delete('/mcp', handle);
  const srv: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  stopAfter(srv);
  running.url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/mcp`;
  return running;
}

export interface NextNoteServerOptions extends NoteServerOptions {
  /** `reject`: strict, 2026-07-28 only; `stateless` (the SDK's default): 2025 clients served statelessly too. */
  legacy: 'stateless' | 'reject';
}

export interface RunningNextNoteServer extends RunningNoteServer {
  /** False: `server/discover` is answered "method not found", as by a server that predates it. */
  discoverable: boolean;
}

/** A 2.x server through `createMcpHandler` over node:http. */
export async function startNextNoteServer(opts: NextNoteServerOptions): Promise<RunningNextNoteServer> {
  const book = new NoteBook();
  const handler = createMcpHandler(() => nextNoteServer(book), { legacy: opts.legacy });
  const running: RunningNextNoteServer = { url: '', book, requireBearer: opts.bearer !== undefined, discoverable: true };
  const srv = createServer((req, res) => {
    void serveFetch(req, res, async (request) => {
      if (refused(running, opts, request.headers.get('authorization') ?? undefined)) return unauthorizedResponse();
      if (!running.discoverable && request.method === 'POST') {
        const body = (await request.clone().json()) as { id?: unknown; method?: unknown };
        if (body.method === 'server/discover')
          return Response.json({ jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } });
      }
      return handler.fetch(request);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => handler.close());
  stopAfter(srv);
  running.url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/mcp`;
  return running;
}

/** Hands a node request to a fetch-shaped handler; the client going away aborts the request (MCP cancellation on HTTP). */
async function serveFetch(req: IncomingMessage, res: ServerResponse, handle: (r: Request) => Promise<Response>): Promise<void> {
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && chunks.length > 0;
  const response = await handle(
    new Request(`http://127.0.0.1${req.url ?? '/'}`, {
      method: req.method,
      headers,
      signal: gone.signal,
      ...(hasBody ? { body: Buffer.concat(chunks) } : {}),
    }),
  ).catch(() => new Response(null, { status: 500 }));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream);
  res.on('close', () => body.destroy());
  body.on('error', () => res.destroy());
  body.pipe(res);
}

function refused(running: RunningNoteServer, opts: NoteServerOptions, authorization: string | undefined): boolean {
  return running.requireBearer && authorization !== `Bearer ${opts.bearer}`;
}

const unauthorizedBody = { error: 'invalid_token', error_description: 'a bearer token is required' };

function unauthorized(res: express.Response): void {
  res.status(401).set('www-authenticate', 'Bearer').json(unauthorizedBody);
}

function unauthorizedResponse(): Response {
  return Response.json(unauthorizedBody, { status: 401, headers: { 'www-authenticate': 'Bearer' } });
}

function stopAfter(srv: Server): void {
  after(() => {
    srv.closeAllConnections();
    srv.close();
  });
}
