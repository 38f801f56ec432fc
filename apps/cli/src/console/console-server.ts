import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CliError } from '../cli-error.js';
import { bearerToken, hasControlCharacter, hasLoneSurrogate, isJsonObject } from '@mesh/contract';
import { ConsoleClients, type ConsoleTargets } from './console-clients.js';
import { CONSOLE_HTML, CONSOLE_SCRIPT, CONSOLE_STYLE } from './console-page.js';
import { cancelTask, deadLetterView, replayAgentDeadLetters, resolveUnknown, workersView } from './console-operations.js';
import { ConsoleSampler } from './console-sampler.js';
import { OverviewSource, type TaskFilter } from './overview.js';
import { taskDetail } from './task-detail.js';

export type { ConsoleTargets } from './console-clients.js';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;

/** Only the page's own script and style run; it talks only to this server and may not be framed. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(CONSOLE_SCRIPT)}`,
  `style-src ${sha256(CONSOLE_STYLE)}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The host name of a Host header (`name:port`, `[v6]:port`), lower case; '' when absent. */
function hostnameOf(host: string | undefined): string {
  if (!host) return '';
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0]!;
}

const sameSecret = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** A running console; `stop` closes the server, its sampler and its Kafka connection. */
export interface RunningConsole {
  url: string;
  stop(): Promise<void>;
}

/** How the console serves and samples. */
export interface ConsoleOptions {
  port?: number;
  host?: string;
  /** How often the lag and throughput charts are sampled (default 5 s). */
  sampleIntervalMs?: number;
  /** How far back the charts reach (default 10 minutes). */
  windowMs?: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The HTTP status of a failure: the request's fault, a thing not found, or the service behind. */
/** An id or filter from the URL: no control character (NUL included) goes on to a service. */
function plainText(field: string, value: string): string {
  if (hasControlCharacter(value) || hasLoneSurrogate(value)) throw new HttpError(400, `${field}: no control characters (NUL included)`);
  return value;
}

function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (err instanceof CliError) {
    if (err.code === 'usage') return 400;
    if (err.code === 'not_found') return 404;
    const upstream = /answered (4\d\d) /.exec(err.message);
    return upstream ? Number(upstream[1]) : 502;
  }
  return 500;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 16_384) throw new HttpError(413, 'request body over 16 KiB');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  try {
    const body: unknown = JSON.parse(text);
    if (isJsonObject(body)) return body;
  } catch {
    // answered below
  }
  throw new HttpError(400, 'the request body must be a JSON object');
}

/**
 * Serves the operator console: the pages on `/` and the JSON API they call. It runs where the
 * operator is (like `kubectl proxy`), with the operator's credentials, and binds to 127.0.0.1 by
 * default: it shows every tenant the token may see and every agent's unknowns. Actions (POST)
 * need the ops token in `Authorization`, which a page of another site cannot send.
 */
export async function startConsole(targets: ConsoleTargets, opts: ConsoleOptions = {}): Promise<RunningConsole> {
  const clients = new ConsoleClients(targets);
  const source = new OverviewSource(clients);
  const sampler = new ConsoleSampler(clients, { intervalMs: opts.sampleIntervalMs ?? 5000, windowMs: opts.windowMs ?? 600_000 });
  const loopbackOnly = LOOPBACK_HOSTS.has(opts.host ?? '127.0.0.1');

  // A page polls every 2 s: a source that stays down is logged once per cause, not on every refresh.
  const logged = new Set<string>();
  const logOnce = (path: string, err: string) => {
    const cause = `${path}|${err}`;
    if (logged.has(cause)) return;
    if (logged.size >= 1000) logged.clear();
    logged.add(cause);
    clients.logger.warn({ path, err }, 'console request failed');
  };

  const authorize = (req: IncomingMessage) => {
    if (!targets.opsToken)
      throw new HttpError(403, 'actions are disabled: start the console with an ops token (--ops-token or MESH_OPS_TOKEN)');
    const presented = bearerToken(req.headers.authorization);
    if (!presented || !sameSecret(presented, targets.opsToken))
      throw new HttpError(401, 'this action needs the ops token: Authorization: Bearer <ops token>');
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'send actions as application/json');
  };

  const route = async (req: IncomingMessage, url: URL): Promise<unknown> => {
    const seg = url.pathname
      .split('/')
      .filter(Boolean)
      .map((s) => {
        let decoded: string;
        try {
          decoded = decodeURIComponent(s);
        } catch {
          throw new HttpError(400, 'path: malformed percent-encoding (%XX must encode UTF-8)');
        }
        return plainText('path', decoded);
      });
    const q = (name: string) => {
      const v = url.searchParams.get(name) || undefined;
      return v === undefined ? undefined : plainText(name, v);
    };
    if (req.method === 'GET') {
      if (url.pathname === '/api/overview') {
        const filter: TaskFilter = {
          ...(q('agent') ? { agent: q('agent') } : {}),
          ...(q('state') ? { state: q('state') } : {}),
          ...(q('tenant') ? { tenant: q('tenant') } : {}),
        };
        return { ...(await source.overview(filter)), series: sampler.series() };
      }
      if (seg[1] === 'tasks' && seg.length === 4) return taskDetail(clients, seg[2]!, seg[3]!);
      if (url.pathname === '/api/workers') return workersView(clients);
      if (url.pathname === '/api/dead-letters') return deadLetterView(clients);
      throw new HttpError(404, 'not found');
    }
    if (req.method === 'POST') {
      authorize(req);
      const body = await readJson(req);
      if (seg[1] === 'tasks' && seg.length === 5 && seg[4] === 'cancel') return cancelTask(clients, seg[2]!, seg[3]!);
      if (seg[1] === 'dead-letters' && seg.length === 4 && seg[3] === 'replay') return replayAgentDeadLetters(clients, seg[2]!);
      if (seg[1] === 'unknowns' && seg.length === 4 && seg[3] === 'resolve') return resolveUnknown(clients, seg[2]!, body);
      throw new HttpError(404, 'not found');
    }
    throw new HttpError(405, 'only GET and POST');
  };

  const server: Server = createServer((req, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    // A page from any web site can reach a loopback port through a DNS name rebound to 127.0.0.1;
    // the Host it sends is then that name, never a loopback one, and it gets nothing.
    if (loopbackOnly && !LOOPBACK_HOSTS.has(hostnameOf(req.headers.host))) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'the console answers only to localhost' }));
      return;
    }
    if (req.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html')) {
      res
        .writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'content-security-policy': CONSOLE_CSP,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        })
        .end(CONSOLE_HTML);
      return;
    }
    if (!url.pathname.startsWith('/api/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    route(req, url).then(
      (body) => res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body)),
      (err: unknown) => {
        const status = statusOf(err);
        if (status >= 500) logOnce(url.pathname, err instanceof Error ? err.message : String(err));
        if (!res.headersSent)
          res
            .writeHead(status, { 'content-type': 'application/json', ...(status === 405 ? { allow: 'GET, POST' } : {}) })
            .end(JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
      },
    );
  });
  const host = opts.host ?? '127.0.0.1';
  const wanted = opts.port ?? 8090;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      // One line the operator can act on, not a stack: the port is taken, or the address is not this machine's.
      const why = err.code === 'EADDRINUSE' ? 'the port is in use (choose another --port, or 0 for any free one)' : err.message;
      reject(new CliError(`cannot serve the console on ${host}:${wanted}: ${why}`));
    });
    server.listen(wanted, host, () => resolve());
  });
  sampler.start();
  const { port, address } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/`,
    async stop() {
      await sampler.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await clients.close();
    },
  };
}
