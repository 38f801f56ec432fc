import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpSpec, loadConfig } from '@mesh/config';
import { HealthModule } from './health.js';
import { refuseMalformedUtf8, startHttpService } from './http-service.js';

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
