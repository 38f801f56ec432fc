import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { httpSpec, loadConfig } from '@mesh/config';
import { HealthModule } from './health.js';
import { startHttpService } from './http-service.js';

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
