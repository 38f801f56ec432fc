import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpSpec, loadConfig } from '@mesh/config';
import { HealthModule } from './health.js';
import { startHttpService } from './http-service.js';
import { refuseMalformedUtf8 } from './request-body.js';

const module = HealthModule.forProbes([]);

test('a service listens on 127.0.0.1 unless a host is configured', async () => {
  assert.equal(loadConfig(httpSpec, {}).HTTP_HOST, '127.0.0.1');
  assert.equal(loadConfig(httpSpec, { HTTP_HOST: '0.0.0.0' }).HTTP_HOST, '0.0.0.0');
  assert.throws(() => loadConfig(httpSpec, { HTTP_HOST: 'http://x/' }), /HTTP_HOST/);

  const local = await startHttpService({ module, port: 0 });
  try {
    assert.equal((local.getHttpServer().address() as AddressInfo).address, '127.0.0.1');
  } finally {
    await local.close();
  }
  const wide = await startHttpService({ module, port: 0, host: loadConfig(httpSpec, { HTTP_HOST: '0.0.0.0' }).HTTP_HOST });
  try {
    assert.equal((wide.getHttpServer().address() as AddressInfo).address, '0.0.0.0');
  } finally {
    await wide.close();
  }
});

test('a client that never finishes its request does not hold the socket for long', async () => {
  const app = await startHttpService({ module, port: 0 });
  try {
    const server = app.getHttpServer() as Server;
    // Node's defaults (60 s for headers, 300 s for a request) let slow clients pile up sockets.
    assert.ok(server.headersTimeout <= 10_000, `headersTimeout ${server.headersTimeout}`);
    assert.ok(server.requestTimeout > 0 && server.requestTimeout <= 30_000, `requestTimeout ${server.requestTimeout}`);
  } finally {
    await app.close();
  }
});

test('a JSON body that is not UTF-8 is refused as malformed, not decoded into replacement characters', () => {
  const bad = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]); // {"a":"<ED A0 80>"}
  assert.throws(
    () => refuseMalformedUtf8({} as never, undefined, bad),
    (err: { status?: number; type?: string }) => {
      return err.status === 400 && err.type === 'entity.parse.failed';
    },
  );
  assert.doesNotThrow(() => refuseMalformedUtf8({} as never, undefined, Buffer.from('{"a":"€ ✓ \\ud83d\\ude00"}')));
});

/**
 * A POST announcing `contentLength` body bytes whose body is held back (only the head is sent):
 * resolves with the status and Connection header, or undefined when no answer came within 1 s.
 */
function postHeadOnly(url: string, headers: Record<string, string>, contentLength = 900_000) {
  return new Promise<{ status?: number; connection?: string } | undefined>((resolve) => {
    const req = request(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': contentLength, ...headers },
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve(undefined);
    }, 1000);
    req.on('response', (res) => {
      clearTimeout(timer);
      res.resume();
      req.destroy();
      resolve({ status: res.statusCode, connection: res.headers.connection });
    });
    req.on('error', () => undefined);
    req.flushHeaders();
  });
}

test('with authenticateBodies, a body is read only once its caller is authenticated', async () => {
  const refused: unknown[] = [];
  const app = await startHttpService({
    module,
    port: 0,
    bodyLimit: '100b',
    authenticateBodies: () => ({
      authenticate: (req) => {
        if (req.headers.authorization === 'Bearer sync-throw') throw new Error('thrown');
        return req.headers.authorization === 'Bearer good' ? Promise.resolve() : Promise.reject(new Error('no credential'));
      },
      refuse: (req, res, reason) => {
        if (req.headers.authorization === 'Bearer refuse-throws') throw new Error('refusal failed');
        refused.push(reason);
        res.status(401).json({ error: 'unauthenticated' });
      },
    }),
    configure: (a) => {
      a.use('/echo', (req: { body?: unknown }, res: { json(v: unknown): void }) => res.json({ body: req.body ?? null }));
    },
  });
  const url = await app.getUrl();
  try {
    // Without a credential the answer comes before the body, with the connection closed.
    assert.deepEqual(await postHeadOnly(url, {}), { status: 401, connection: 'close' });
    assert.equal((await postHeadOnly(url, { authorization: 'Bearer bad' }))?.status, 401);
    assert.equal((await postHeadOnly(url, { authorization: 'Bearer sync-throw' }))?.status, 401, 'a synchronous throw is a refusal too');
    assert.deepEqual(
      refused.map((r) => (r as Error).message),
      ['no credential', 'no credential', 'thrown'],
    );
    // A refusal that fails is an error like any other (500), the connection still closed.
    assert.deepEqual(await postHeadOnly(url, { authorization: 'Bearer refuse-throws' }), { status: 500, connection: 'close' });
    // With one, the body is awaited and parsed as before, within the limit...
    assert.equal(await postHeadOnly(url, { authorization: 'Bearer good' }, 90), undefined);
    // ...and one declared over the limit is refused before a byte of it is read.
    assert.deepEqual(await postHeadOnly(url, { authorization: 'Bearer good' }), { status: 413, connection: 'close' });
    const post = (body: string, headers: Record<string, string>) =>
      fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const ok = await post('{"a":1}', { authorization: 'Bearer good' });
    assert.deepEqual(await ok.json(), { body: { a: 1 } });
    assert.equal((await post(JSON.stringify({ pad: 'x'.repeat(200) }), { authorization: 'Bearer good' })).status, 413);
    // A request without a body never asks for a credential: public routes stay public.
    assert.equal((await fetch(`${url}/livez`)).status, 200);
    assert.deepEqual(await (await fetch(`${url}/echo`)).json(), { body: null });
    assert.equal(refused.length, 3);
  } finally {
    await app.close();
  }
});
