import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentRecord } from '@mesh/contract';
import { InMemoryAgentCatalog } from './agent-catalog.js';
import { buildServedCard } from './agent-card.builder.js';

const record = (patch: Partial<AgentRecord> = {}): AgentRecord => ({
  id: 'a',
  tenant: 'acme',
  visibility: 'public',
  version: 2,
  card: {
    name: 'A',
    supportedInterfaces: [{ url: 'http://worker/a', protocolBinding: 'GRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true },
  },
  channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 3 },
  retired: false,
  updatedAt: '2026-01-01T00:00:00Z',
  ...patch,
});

test('visibility: public to all (and anonymous), tenant/private only to the owner; retired to nobody', () => {
  const c = new InMemoryAgentCatalog();
  c.put(record());
  assert.ok(c.resolve('a', 'globex'));
  assert.ok(c.resolve('a', undefined));
  c.put(record({ version: 3, visibility: 'private' }));
  assert.equal(c.resolve('a', 'globex'), undefined);
  assert.equal(c.resolve('a', undefined), undefined);
  assert.ok(c.resolve('a', 'acme'));
  c.put(record({ version: 4, retired: true }));
  assert.equal(c.resolve('a', 'acme'), undefined);
  assert.equal(c.resolve('nobody', 'acme'), undefined);
});

test('an older version replayed after a newer one is ignored; removal forgets the agent', () => {
  const c = new InMemoryAgentCatalog();
  c.put(record({ version: 5, visibility: 'private' }));
  c.put(record({ version: 4, visibility: 'public' }));
  assert.equal(c.get('a')?.version, 5);
  c.remove('a');
  assert.equal(c.get('a'), undefined);
});

test('the served card points both bindings, A2A 1.0 and 0.3, at the dispatcher and claims only what it serves', () => {
  const card = buildServedCard(record(), 'http://mesh.example:8080/');
  assert.deepEqual(
    card.supportedInterfaces.map((i) => [i.protocolBinding, i.url, i.protocolVersion]),
    [
      ['JSONRPC', 'http://mesh.example:8080/a2a/a', '1.0'],
      ['HTTP+JSON', 'http://mesh.example:8080/a2a/a', '1.0'],
      ['JSONRPC', 'http://mesh.example:8080/a2a/a', '0.3'],
      ['HTTP+JSON', 'http://mesh.example:8080/a2a/a', '0.3'],
    ],
  );
  assert.equal(card.capabilities?.streaming, true);
  assert.equal(card.capabilities?.pushNotifications, true);
  assert.equal(card.name, 'A');
});
