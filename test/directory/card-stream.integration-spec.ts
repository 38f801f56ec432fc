import { test } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import { createKafka } from '@mesh/bus';
import { TopicNames, type AgentRecord } from '@mesh/contract';
import { eventually, sql, testRun } from '../support/infra.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

const { dir, prefix, databaseUrl } = await startTestDirectory('card-stream');
const api = client(dir.url);
const topics = new TopicNames(prefix);
const kafka = createKafka({ brokers: testRun().brokers, clientId: 'card-stream-test' });

/** Reads the whole cards topic from the beginning (group-less-style: a unique group per read). */
async function readCards(until: (records: AgentRecord[]) => boolean): Promise<AgentRecord[]> {
  const records: AgentRecord[] = [];
  const consumer = kafka.consumer({ groupId: `${prefix}reader-${Date.now()}-${Math.random()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: topics.cards(), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const r = JSON.parse(message.value!.toString()) as AgentRecord;
        assert.equal(message.key?.toString(), r.id, 'key = agent id');
        records.push(r);
      },
    });
    await eventually('cards records', () => until(records));
    return records;
  } finally {
    await consumer.disconnect();
  }
}

test('register creates the command topic with the requested partitions; the cards topic is compacted', async () => {
  const r = await api(KEYS.acme, 'POST', '/v1/agents', { id: 'streamed', card: card('Streamed'), channel: { partitions: 5 } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.commandTopic, topics.commands('streamed'));
  const admin = kafka.admin();
  await admin.connect();
  try {
    const meta = await admin.fetchTopicMetadata({ topics: [topics.commands('streamed')] });
    assert.equal(meta.topics[0].partitions.length, 5);
    const cfg = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topics.cards(), configNames: ['cleanup.policy'] }],
    });
    assert.equal(cfg.resources[0].configEntries[0].configValue, 'compact');
    assert.equal((await api(KEYS.acme, 'PUT', '/v1/agents/streamed', { card: card('Streamed'), channel: { partitions: 7 } })).status, 200);
    const grown = await admin.fetchTopicMetadata({ topics: [topics.commands('streamed')] });
    assert.equal(grown.topics[0].partitions.length, 7, 'growing partitions on update');
  } finally {
    await admin.disconnect();
  }
});

test('every register, update and retire is published as an AgentRecord keyed by agent id', async () => {
  assert.equal((await api(KEYS.acme, 'DELETE', '/v1/agents/streamed')).status, 200);
  const records = await readCards((rs) => rs.some((r) => r.id === 'streamed' && r.retired));
  const mine = records.filter((r) => r.id === 'streamed');
  assert.deepEqual(
    mine.map((r) => [r.version, r.retired, r.channel.partitions]),
    [
      [1, false, 5],
      [2, false, 7],
      [2, true, 7],
    ],
  );
  assert.equal(mine[0].tenant, 'acme');
  assert.equal(mine[0].visibility, 'tenant');
  assert.equal(mine[0].card.name, 'Streamed');
  assert.equal(await dir.pendingCardRecords(), 0);
});

test('a committed change whose record was not published is re-published by the outbox sweep', async () => {
  assert.equal(
    (await api(KEYS.globex, 'POST', '/v1/agents', { id: 'lost-record', card: card('Lost Record'), visibility: 'public' })).status,
    201,
  );
  // Simulate a crash between commit and publish: the row says its record never went out.
  await sql(databaseUrl, `UPDATE directory.agent SET published_revision = 0 WHERE id = 'lost-record'`);
  assert.equal(await dir.pendingCardRecords(), 1);
  await eventually('outbox sweep', async () => (await dir.pendingCardRecords()) === 0);
  const records = await readCards((rs) => rs.filter((r) => r.id === 'lost-record').length >= 2);
  assert.ok(records.filter((r) => r.id === 'lost-record').every((r) => r.visibility === 'public' && r.tenant === 'globex'));
});
