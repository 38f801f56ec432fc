import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentCatalog } from '@mesh/agent-directory';
import { createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { eventually, testRun } from '../support/infra.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

const { dir, prefix } = await startTestDirectory('agent-catalog');
const api = client(dir.url);
const kafka = createKafka({ brokers: testRun().brokers, clientId: 'catalog-test' });

test('AgentCatalog rebuilds the directory from the compacted topic and follows changes and heartbeats', async () => {
  // Registered before the catalog starts: it must come from the topic's history.
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'cat-tenant', card: card('Cat Tenant') })).status, 201);
  assert.equal(
    (await api(KEYS.globex, 'POST', '/v1/agents', { id: 'cat-public', card: card('Cat Public'), visibility: 'public' })).status,
    201,
  );

  const catalog = new AgentCatalog({ kafka, topics: new TopicNames(prefix), defaultTtlMs: 30_000 });
  await catalog.start();
  try {
    assert.equal(catalog.get('cat-tenant', 'acme')?.tenant, 'acme', 'history is there once start() resolves');
    assert.equal(catalog.get('cat-tenant', 'globex'), undefined, "another tenant's agent is invisible");
    assert.equal(catalog.get('cat-public', 'acme')?.visibility, 'public');
    assert.equal(catalog.healthy('cat-tenant'), false);

    assert.equal((await api(KEYS.acme, 'PUT', '/v1/agents/cat-tenant', { card: card('Cat Tenant', { version: '2' }) })).status, 200);
    await eventually('update seen', () => catalog.get('cat-tenant', 'acme')?.version === 2);

    assert.equal((await api(KEYS.acme, 'POST', '/v1/agents/cat-tenant/heartbeat', { ttlMs: 60_000 })).status, 200);
    await eventually('HTTP heartbeat forwarded to the heartbeats topic', () => catalog.healthy('cat-tenant'));

    assert.equal((await api(KEYS.acme, 'DELETE', '/v1/agents/cat-tenant')).status, 200);
    await eventually('retire seen', () => catalog.get('cat-tenant', 'acme')?.retired === true);
    assert.equal(catalog.healthy('cat-tenant'), false, 'retired agents are never healthy');
  } finally {
    await catalog.stop();
  }
});

test('a catalog started after a heartbeat knows the agent is healthy once start() resolves, not only after the next heartbeat', async () => {
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'cat-beating', card: card('Cat Beating') })).status, 201);
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents/cat-beating/heartbeat', { ttlMs: 60_000 })).status, 200);
  // An older heartbeat whose TTL has passed counts for nothing.
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'cat-gone-quiet', card: card('Cat Gone Quiet') })).status, 201);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: new TopicNames(prefix).heartbeats(),
    messages: [
      {
        key: 'cat-gone-quiet',
        value: JSON.stringify({ agentId: 'cat-gone-quiet', workerId: 'w', atUnixMs: Date.now() - 120_000, ttlMs: 60_000 }),
      },
    ],
  });
  await producer.disconnect();

  const restarted = new AgentCatalog({ kafka, topics: new TopicNames(prefix), defaultTtlMs: 30_000 });
  await restarted.start();
  try {
    assert.equal(restarted.healthy('cat-beating'), true);
    assert.equal(restarted.healthy('cat-gone-quiet'), false);
  } finally {
    await restarted.stop();
  }
});
