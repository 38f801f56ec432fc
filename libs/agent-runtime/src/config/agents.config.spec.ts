import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadAgentsConfig } from './agents.config.js';

test('defaults and MCP server overrides parse; a bad override is one clear CONFIG_INVALID', () => {
  const c = loadAgentsConfig({
    AGENTS_MCP_SERVERS: '{"billing":{"url":"http://billing:8083/mcp"}}',
    AGENTS_RUN: 'refund-agent, echo-agent',
  });
  assert.deepEqual(c.AGENTS_RUN, ['refund-agent', 'echo-agent']);
  assert.equal(c.AGENTS_MCP_SERVERS.billing.url, 'http://billing:8083/mcp');
  assert.equal(c.AGENTS_PORT, 8082);
  assert.throws(() => loadAgentsConfig({ AGENTS_MCP_SERVERS: '[1,2]' }), /AGENTS_MCP_SERVERS/);
  assert.throws(() => loadAgentsConfig({ AGENTS_MCP_SERVERS: '{nope' }), /AGENTS_MCP_SERVERS/);
});

test('team mode: AGENTS_EVENT_KEY or AGENTS_EVENT_KEY_FILE holds a private Ed25519 JWK with kid; anything else is refused', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const base = { KAFKA_BROKERS: 'localhost:9092', DATABASE_URL: 'postgres://localhost/x' };
  const key = { kty: 'OKP', crv: 'Ed25519', kid: 'k1', x: 'xx', d: 'dd' };
  assert.equal(loadAgentsConfig(base).AGENTS_EVENT_KEY, undefined);
  assert.deepEqual(loadAgentsConfig({ ...base, AGENTS_EVENT_KEY: JSON.stringify(key) }).AGENTS_EVENT_KEY, key);
  const file = join(mkdtempSync(join(tmpdir(), 'event-key-')), 'key.json');
  writeFileSync(file, JSON.stringify(key));
  assert.deepEqual(loadAgentsConfig({ ...base, AGENTS_EVENT_KEY_FILE: file }).AGENTS_EVENT_KEY, key);
  assert.throws(() => loadAgentsConfig({ ...base, AGENTS_EVENT_KEY_FILE: file, AGENTS_EVENT_KEY: JSON.stringify(key) }), /not both/);
  assert.throws(() => loadAgentsConfig({ ...base, AGENTS_EVENT_KEY_FILE: `${file}.missing` }), /cannot read/);
  assert.throws(() => loadAgentsConfig({ ...base, AGENTS_EVENT_KEY: 'not json' }), /private Ed25519 JWK/);
  for (const bad of [
    { ...key, d: undefined },
    { ...key, kid: undefined },
    { ...key, crv: 'P-256' },
  ]) {
    assert.throws(() => loadAgentsConfig({ ...base, AGENTS_EVENT_KEY: JSON.stringify(bad) }), /AGENTS_EVENT_KEY/);
  }
});
