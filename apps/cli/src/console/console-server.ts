import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CONSOLE_HTML } from './console-page.js';
import { OverviewSource, type ConsoleTargets } from './overview.js';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** The host name of a Host header (`name:port`, `[v6]:port`), lower case; '' when absent. */
function hostnameOf(host: string | undefined): string {
  if (!host) return '';
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0]!;
}

/** A running console; `stop` closes the server and its Kafka connection. */
export interface RunningConsole {
  url: string;
  stop(): Promise<void>;
}

/**
 * Serves the operator console: the page on `/` and the aggregated `GET /api/overview` it polls.
 * It runs where the operator is (like `kubectl proxy`), with the operator's credentials, and binds
 * to 127.0.0.1 by default: it shows every tenant the token may see and every agent's unknowns.
 */
export async function startConsole(targets: ConsoleTargets, opts: { port?: number; host?: string } = {}): Promise<RunningConsole> {
  const source = new OverviewSource(targets);
  const loopbackOnly = LOOPBACK_HOSTS.has(opts.host ?? '127.0.0.1');
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    // A page from any web site can reach a loopback port through a DNS name rebound to 127.0.0.1;
    // the Host it sends is then that name, never a loopback one, and it gets nothing.
    if (loopbackOnly && !LOOPBACK_HOSTS.has(hostnameOf(req.headers.host))) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'the console answers only to localhost' }));
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(CONSOLE_HTML);
      return;
    }
    if (path === '/api/overview') {
      source.overview().then(
        (o) => res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(o)),
        (err: unknown) => res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) })),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 8090, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/`,
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await source.close();
    },
  };
}
