import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKafka } from '@mesh/bus';
import { TopicNames, type AgentHeartbeat } from '@mesh/contract';
import { eventually, testRun } from '../support/infra.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

const { dir, prefix } = await startTestDirectory('liveness', { DIRECTORY_HEARTBEAT_TTL_MS: '1500', DIRECTORY_HEARTBEATS_PER_MINUTE: '6' });
const api = client(dir.url);

test('an HTTP heartbeat makes an agent healthy until its TTL passes', async () => {
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'beating', card: card('Beating') })).status, 201);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/beating')).body.healthy, false);
  const beat = await api(KEYS.acme, 'POST', '/v1/agents/beating/heartbeat', { ttlMs: 1000 });
  assert.equal(beat.status, 200, JSON.stringify(beat.body));
  assert.equal(beat.body.healthy, true);
  assert.deepEqual(
    (await api(KEYS.acme, 'GET', '/v1/agents?healthy=true&q=beating')).body.items.map((a: { id: string }) => a.id),
    ['beating'],
  );
  await eventually('heartbeat expiry', async () => (await api(KEYS.acme, 'GET', '/v1/agents/beating')).body.healthy === false);
  assert.deepEqual((await api(KEYS.acme, 'GET', '/v1/agents?healthy=true&q=beating')).body.items, []);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents?healthy=false&q=beating')).body.items.length, 1);

  const bad = await api(KEYS.acme, 'POST', '/v1/agents/beating/heartbeat', { ttlMs: 5 });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].field, 'ttlMs');
});

test('HTTP heartbeats are bounded per agent: past the burst they are 429 with Retry-After, other agents unaffected', async () => {
  for (const id of ['throttled', 'neighbour'])
    assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id, card: card(id) })).status, 201);
  // 6 a minute here, 6 at once.
  for (let i = 0; i < 6; i++)
    assert.equal((await api(KEYS.acme, 'POST', '/v1/agents/throttled/heartbeat', { ttlMs: 60_000 })).status, 200, `beat ${i}`);
  const refused = await api(KEYS.acme, 'POST', '/v1/agents/throttled/heartbeat', { ttlMs: 60_000 });
  assert.equal(refused.status, 429, JSON.stringify(refused.body));
  assert.equal(refused.headers.get('retry-after'), '10', 'one heartbeat every 10 s at 6 a minute');
  assert.match(refused.body.detail ?? refused.body.title ?? '', /too many heartbeats for agent "throttled"/);
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents/neighbour/heartbeat', { ttlMs: 60_000 })).status, 200);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/throttled')).body.healthy, true, 'the accepted ones counted');
});

test('heartbeats on the Kafka topic count too (default TTL when none is given); junk is skipped', async () => {
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'kafka-beating', card: card('Kafka Beating') })).status, 201);
  const producer = createKafka({ brokers: testRun().brokers, clientId: 'liveness-test' }).producer();
  await producer.connect();
  try {
    const topic = new TopicNames(prefix).heartbeats();
    await eventually('healthy from a Kafka heartbeat', async () => {
      const hb: AgentHeartbeat = { agentId: 'kafka-beating', workerId: 'w1', atUnixMs: Date.now(), ttlMs: 0 };
      await producer.send({
        topic,
        messages: [
          { key: 'junk', value: 'not json' },
          { key: hb.agentId, value: JSON.stringify(hb) },
          { key: 'ghost', value: JSON.stringify({ ...hb, agentId: 'ghost' }) },
        ],
      });
      return (await api(KEYS.acme, 'GET', '/v1/agents/kafka-beating')).body.healthy === true;
    });
    // The directory default TTL (1.5 s here) applies, so it expires without further heartbeats.
    await eventually(
      'expiry after the default TTL',
      async () => (await api(KEYS.acme, 'GET', '/v1/agents/kafka-beating')).body.healthy === false,
    );
  } finally {
    await producer.disconnect();
  }
});
