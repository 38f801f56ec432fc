import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';

/**
 * A plain HTTP request (node:http): unlike fetch it adds no Cache-Control to conditional
 * requests, and repeated headers, odd content types and raw bytes reach the server unchanged.
 * With `timeoutMs`, no answer in time is an error (a hang is a finding).
 */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: OutgoingHttpHeaders; body?: string | Buffer; timeoutMs?: number } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const method = opts.method ?? 'GET';
    const req = httpRequest(url, { method, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    if (opts.timeoutMs !== undefined) {
      const ms = opts.timeoutMs;
      req.setTimeout(ms, () => req.destroy(new Error(`no answer within ${ms / 1000} s: ${method} ${url}`)));
    }
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * Opens a request that announces a body (`contentLength` bytes, 1 MB by default) and sends its head
 * and the first `sendBytes` of the body (1 KB by default), then holds the rest back: resolves with
 * the status line once the server answers (and whether it then closed the connection), or undefined
 * when it has not answered within `waitMs` (a server that reads the body first waits for the rest).
 */
export function holdBody(
  url: string,
  path: string,
  headers: Record<string, string>,
  opts: { waitMs?: number; method?: string; contentLength?: number; sendBytes?: number } = {},
): Promise<{ status: number; closed: boolean } | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname === 'localhost' ? '127.0.0.1' : hostname);
    let answer = '';
    let status: number | undefined;
    const done = (v: { status: number; closed: boolean } | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(status === undefined ? undefined : { status, closed: false }), opts.waitMs ?? 3000);
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      const line = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      status ??= line ? Number(line[1]) : undefined;
    });
    socket.on('close', () => done(status === undefined ? undefined : { status, closed: true }));
    const head = Object.entries({
      host: 'localhost',
      'content-type': 'application/json',
      'content-length': String(opts.contentLength ?? 1_000_000),
      ...headers,
    })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(`${opts.method ?? 'POST'} ${path} HTTP/1.1\r\n${head}\r\n`);
    const sendBytes = opts.sendBytes ?? 1024;
    if (sendBytes > 0) socket.write(Buffer.alloc(sendBytes, 0x20));
  });
}

/** What a client pushing a body saw: the server's answer, whether the server closed, and how far it got. */
export interface PushedBody {
  /** The status of the first answer (0: none within the wait). */
  status: number;
  /** Everything the server sent, as latin1 text. */
  answer: string;
  closedByServer: boolean;
  /** Body bytes the client got onto the wire before the server stopped reading (or `maxBytes`). */
  bodyBytesSent: number;
}

/**
 * Sends a request head (Content-Length `contentLength`, 2^40 by default, or chunked) and then body
 * bytes as fast as the server takes them, up to `maxBytes` (64 MiB), for at most `waitMs`: how a
 * caller with an endless body finds out whether the server reads it to its end.
 */
export function pushBody(
  url: string,
  path: string,
  headers: Record<string, string>,
  opts: { contentLength?: number; chunked?: boolean; maxBytes?: number; waitMs?: number } = {},
): Promise<PushedBody> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname === 'localhost' ? '127.0.0.1' : hostname);
    let answer = '';
    let closedByServer = false;
    let sent = 0;
    let stop = false;
    const finish = () => {
      stop = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0), answer, closedByServer, bodyBytesSent: sent });
    };
    const timer = setTimeout(finish, opts.waitMs ?? 5000);
    const serverGone = () => {
      closedByServer = true;
      stop = true;
    };
    socket.on('error', serverGone);
    socket.on('end', serverGone);
    socket.on('close', finish);
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    const framing = opts.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(opts.contentLength ?? 2 ** 40) };
    const head = Object.entries({ host: 'localhost', 'content-type': 'application/json', ...framing, ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const framed = opts.chunked ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
    const pump = () => {
      while (!stop && sent < (opts.maxBytes ?? 64 * 1024 * 1024)) {
        sent += chunk.length;
        if (!socket.write(framed)) return void socket.once('drain', pump);
      }
    };
    pump();
  });
}
