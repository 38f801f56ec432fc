import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadDirectoryConfig } from './directory.config.js';

test('demo API keys apply only in explicit development mode; configured keys always win', () => {
  assert.deepEqual(loadDirectoryConfig({}).auth.apiKeys, [], 'no keys by default');
  const dev = loadDirectoryConfig({ DEMO: 'true' }).auth.apiKeys ?? [];
  assert.deepEqual(
    dev.map((k) => [k.key, k.tenant, k.subject]),
    [
      ['demo-acme', 'acme', 'alice'],
      ['demo-globex', 'globex', 'bob'],
    ],
  );
  const own = loadDirectoryConfig({ DEMO: 'true', AUTH_API_KEYS: 'my-own-key=initech:carol' }).auth.apiKeys ?? [];
  assert.deepEqual(
    own.map((k) => k.tenant),
    ['initech'],
  );
});

test('values are validated and normalised, bad ones name the variable', () => {
  const c = loadDirectoryConfig({ DISPATCHER_PUBLIC_URL: 'dispatcher:8080/', DIRECTORY_REQUIRE_SIGNED_TENANTS: 'acme, globex' });
  assert.equal(c.DISPATCHER_PUBLIC_URL, 'http://dispatcher:8080');
  assert.deepEqual(c.DIRECTORY_REQUIRE_SIGNED_TENANTS, ['acme', 'globex']);
  assert.equal(c.DIRECTORY_HEARTBEAT_TTL_MS, 30_000);
  assert.throws(() => loadDirectoryConfig({ DIRECTORY_SIGNING_JWK: '{nope' }), /DIRECTORY_SIGNING_JWK/);
  assert.throws(() => loadDirectoryConfig({ DIRECTORY_TRUSTED_JWKS: '[]' }), /DIRECTORY_TRUSTED_JWKS.*not a JSON object/);
  assert.throws(() => loadDirectoryConfig({ DIRECTORY_HEARTBEAT_TTL_MS: '-1' }), /DIRECTORY_HEARTBEAT_TTL_MS/);
});
