import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { logLevel } from 'kafkajs';
import { DEMO_API_KEYS } from '@mesh/auth';
import { createKafka } from '@mesh/bus';
import { TopicNames, type AgentRecord } from '@mesh/contract';
import { loadDirectoryConfig, startDirectory, type RunningDirectory } from '@mesh/app-directory';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

// The directory's database owns the agents; the cards topic and the command topics are copies it
// reconciles: at start (a re-formatted broker, a new cluster) and when a periodic check finds the
// cards topic behind the database. A second topic prefix on the same database stands for an empty
// cluster.

const first = await startTestDirectory('card-reconcile');
const api = client(first.dir.url);
assert.equal(
  (await api(KEYS.acme, 'POST', '/v1/agents', { id: 'rs-live', card: card('Rs Live'), channel: { partitions: 2 } })).status,
  201,
);
assert.equal(
  (await api(KEYS.globex, 'POST', '/v1/agents', { id: 'rs-public', card: card('Rs Public'), visibility: 'public' })).status,
  201,
);
assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'rs-gone', card: card('Rs Gone') })).status, 201);
assert.equal((await api(KEYS.acme, 'DELETE', '/v1/agents/rs-gone')).status, 200);

const kafka = createKafka({ brokers: testRun().brokers, clientId: 'card-reconcile-test' }, { logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const second: { dir?: RunningDirectory } = {};
/** Topics of the second directory: an empty "cluster" for the same database. */
const topics = new TopicNames(uniquePrefix('card-reconcile-empty'));
after(async () => {
  await second.dir?.stop();
  await admin.disconnect();
});

/** Latest record per agent id on a cards topic (read from the beginning until `until` holds). */
async function latestCards(until: (r: Map<string, AgentRecord>) => boolean): Promise<Map<string, AgentRecord>> {
  const latest = new Map<string, AgentRecord>();
  const consumer = kafka.consumer({ groupId: `${topics.prefix}reader-${Math.random()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: topics.cards(), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => void latest.set(message.key!.toString(), JSON.parse(message.value!.toString())),
    });
    await eventually('cards republished', () => until(latest), 30000, 100);
    return latest;
  } finally {
    await consumer.disconnect();
  }
}

const allThree = (m: Map<string, AgentRecord>) => ['rs-live', 'rs-public', 'rs-gone'].every((id) => m.has(id));

test('at start, every agent (the retired one as retired) is republished and live command topics are recreated', async () => {
  // Stopped, so only the second directory's outbox publishes the rows (both would share them).
  await first.dir.stop();
  const config = loadDirectoryConfig({
    KAFKA_BROKERS: testRun().brokers.join(','),
    DATABASE_URL: first.databaseUrl,
    TOPIC_PREFIX: topics.prefix,
    AUTH_API_KEYS: DEMO_API_KEYS,
    DIRECTORY_RECONCILE_INTERVAL_MS: '500',
  });
  second.dir = await startDirectory({ ...config, DIRECTORY_PORT: 0 });
  const cards = await latestCards(allThree);
  assert.deepEqual([...cards.values()].map((r) => [r.id, r.tenant, r.visibility, r.version, r.retired]).sort(), [
    ['rs-gone', 'acme', 'tenant', 1, true],
    ['rs-live', 'acme', 'tenant', 1, false],
    ['rs-public', 'globex', 'public', 1, false],
  ]);
  const meta = await admin.fetchTopicMetadata({ topics: [topics.commands('rs-live'), topics.commands('rs-public')] });
  assert.deepEqual(meta.topics.map((t) => [t.name, t.partitions.length]).sort(), [
    [topics.commands('rs-live'), 2],
    [topics.commands('rs-public'), 3],
  ]);
  assert.ok(!(await admin.listTopics()).includes(topics.commands('rs-gone')), 'no command topic for a retired agent');
});

test('while running: a deleted cards topic and a deleted command topic are recreated and the cards republished', async () => {
  assert.ok(second.dir, 'the second directory runs');
  await admin.deleteTopics({ topics: [topics.cards(), topics.commands('rs-live')], timeout: 30000 });
  await eventually(
    'topics recreated',
    async () => {
      const have = new Set(await admin.listTopics());
      return have.has(topics.cards()) && have.has(topics.commands('rs-live'));
    },
    30000,
    200,
  );
  const cards = await latestCards(allThree);
  assert.equal(cards.get('rs-gone')?.retired, true);
});
