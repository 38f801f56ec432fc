import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { HealthModule } from './health.js';
import { startHttpService } from './http-service.js';
import { parseByteSize } from './request-body.js';

/**
 * What a raw client saw: the server's answer, whether the server closed the connection, and how
 * many body bytes the client got onto the wire before it stopped (the server stopped reading, or
 * `maxBytes` were sent).
 */
interface Exchange {
  answer: string;
  closedByServer: boolean;
  bodyBytesSent: number;
}

/**
 * Sends `head` then, unless `body` is given, body bytes in 64 KiB chunks as fast as the server
 * reads them, up to `maxBytes` (chunk-framed when the head says chunked); ends after `waitMs`.
 */
function exchange(
  port: number,
  head: string,
  opts: { body?: string; maxBytes?: number; chunked?: boolean; waitMs?: number } = {},
): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    let closedByServer = false;
    let sent = 0;
    let stop = false;
    const finish = () => {
      stop = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ answer, closedByServer, bodyBytesSent: sent });
    };
    const timer = setTimeout(finish, opts.waitMs ?? 1500);
    socket.on('error', () => {
      closedByServer = true;
      stop = true;
    });
    socket.on('data', (c) => (answer += c.toString('latin1')));
    socket.on('end', () => {
      closedByServer = true;
      stop = true;
    });
    socket.on('close', finish);
    socket.write(head);
    if (opts.body !== undefined) return void socket.write(opts.body);
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

const head = (method: string, path: string, headers: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nhost: localhost\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

const LIMIT = 64 * 1024;

/** A service with the app-wide JSON parser, or (`parseJsonBodies: false`, as the dispatcher) none. */
async function startService(parseJsonBodies = true) {
  const app = await startHttpService({
    module: HealthModule.forProbes([]),
    port: 0,
    bodyLimit: `${LIMIT}b`,
    parseJsonBodies,
    configure: (a) => {
      a.use('/echo', (req: { body?: unknown }, res: { json(v: unknown): void }) => res.json({ body: req.body ?? null }));
      a.use('/slow', (_req: unknown, res: { json(v: unknown): void }) => setTimeout(() => res.json({ slow: true }), 1500));
    },
  });
  const port = ((app.getHttpServer() as Server).address() as AddressInfo).port;
  return { app, port };
}

test('parseByteSize reads body-parser sizes in units of 1024, NaN for anything else', () => {
  assert.equal(parseByteSize('1mb'), 1024 * 1024);
  assert.equal(parseByteSize(' 512KB '), 512 * 1024);
  assert.equal(parseByteSize('10'), 10);
  assert.ok(Number.isNaN(parseByteSize('1.5mb')));
  assert.ok(Number.isNaN(parseByteSize('-1')));
  assert.ok(Number.isNaN(parseByteSize('1tb')));
});

test('a declared length over the limit is answered 413 at once and the connection closed: its body is never read', async () => {
  const { app, port } = await startService();
  try {
    // (A length too long for Node's own parser is its 400, equally unread.)
    for (const length of [LIMIT + 1, 2 ** 53 + 1, '9'.repeat(30)]) {
      const r = await exchange(port, head('POST', '/echo', { 'content-type': 'application/json', 'content-length': length }), {
        maxBytes: 32 * 1024 * 1024,
      });
      assert.match(
        r.answer,
        typeof length === 'string' ? /^HTTP\/1\.1 400 / : /^HTTP\/1\.1 413 /,
        `Content-Length ${length}: ${r.answer.slice(0, 80)}`,
      );
      assert.match(r.answer, /connection: close/i);
      assert.ok(r.closedByServer, 'closed by the server');
      assert.ok(r.bodyBytesSent < 8 * 1024 * 1024, `the server stopped reading (the client got ${r.bodyBytesSent} bytes out)`);
    }
  } finally {
    await app.close();
  }
});

test('a chunked body is refused 413 as it passes the limit, not read to its end', async () => {
  const { app, port } = await startService();
  try {
    const r = await exchange(port, head('POST', '/echo', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }), {
      chunked: true,
      maxBytes: 64 * 1024 * 1024,
    });
    assert.match(r.answer, /^HTTP\/1\.1 413 /, r.answer.slice(0, 80));
    assert.ok(r.closedByServer);
    assert.ok(r.bodyBytesSent < 8 * 1024 * 1024, `the server stopped reading (the client got ${r.bodyBytesSent} bytes out)`);
  } finally {
    await app.close();
  }
});

test('a refused body is not read on while its answer waits behind a pipelined one', async () => {
  const { app, port } = await startService();
  try {
    // The 413 can only be written after the slow answer: the body must not be read meanwhile.
    const pipelined =
      head('GET', '/slow', {}) + head('POST', '/echo', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const r = await exchange(port, pipelined, { chunked: true, maxBytes: 256 * 1024 * 1024, waitMs: 3000 });
    assert.match(r.answer, /^HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 413 /, r.answer.slice(0, 80));
    assert.ok(r.closedByServer);
    assert.ok(r.bodyBytesSent < 8 * 1024 * 1024, `the server stopped reading (the client got ${r.bodyBytesSent} bytes out)`);
  } finally {
    await app.close();
  }
});

test('a route that reads no body closes a connection whose body is unbounded, and keeps one whose body is small', async () => {
  const { app, port } = await startService(false);
  try {
    // Without an app-wide parser, POST /healthz, /echo and an unknown path read no body: one over
    // the limit is not read on.
    for (const path of ['/healthz', '/echo', '/no-such-route']) {
      const r = await exchange(port, head('POST', path, { 'content-type': 'application/json', 'content-length': 2 ** 40 }), {
        maxBytes: 64 * 1024 * 1024,
      });
      assert.match(r.answer, /^HTTP\/1\.1 (200|404) /, `${path}: ${r.answer.slice(0, 80)}`);
      assert.match(r.answer, /connection: close/i, path);
      assert.ok(r.closedByServer, path);
      assert.ok(r.bodyBytesSent < 8 * 1024 * 1024, `${path}: the client got ${r.bodyBytesSent} bytes out`);
    }
    // Within the limit but more than a header block's worth, unread (a caller without a credential,
    // pipelining such bodies): not drained either, or it would be read body after body at wire speed.
    for (const path of ['/livez', '/no-such-route']) {
      const r = await exchange(port, head('POST', path, { 'content-type': 'application/json', 'content-length': 32 * 1024 }), {
        body: '',
      });
      assert.match(r.answer, /connection: close/i, `${path}: ${r.answer.slice(0, 120)}`);
      assert.ok(r.closedByServer, path);
    }
    // A small declared body is drained: the kept-alive connection serves the next (pipelined) request.
    const small = await exchange(port, head('POST', '/no-such-route', { 'content-type': 'application/json', 'content-length': 2 }), {
      body: '{}' + head('GET', '/livez', {}),
    });
    assert.match(small.answer, /^HTTP\/1\.1 404 /);
    assert.match(small.answer, /^HTTP\/1\.1 404 [\s\S]*HTTP\/1\.1 200 /, 'the next request on the same connection was answered');
    assert.equal(small.closedByServer, false);
  } finally {
    await app.close();
  }
});

test('Expect: 100-continue is invited only when the body is about to be read', async () => {
  const { app, port } = await startService();
  const unparsed = await startService(false);
  try {
    const expect = { 'content-type': 'application/json', expect: '100-continue' };
    // Within the limit, on a route that reads it: 100 Continue, and the server waits for the body.
    const ok = await exchange(port, head('POST', '/echo', { ...expect, 'content-length': 7 }), { body: '' });
    assert.match(ok.answer, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, ok.answer.slice(0, 80));
    // A body over the limit, or on a route that reads none: the final answer, no invitation.
    const big = await exchange(port, head('POST', '/echo', { ...expect, 'content-length': LIMIT + 1 }), { body: '' });
    assert.match(big.answer, /^HTTP\/1\.1 413 /);
    const none = await exchange(unparsed.port, head('POST', '/no-such-route', { ...expect, 'content-length': 7 }), { body: '' });
    assert.match(none.answer, /^HTTP\/1\.1 404 /);
  } finally {
    await app.close();
    await unparsed.app.close();
  }
});
