import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEnvelope, Headers } from '@mesh/contract';
import { BusAdmin, BusProducer } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka } from '../support/bus.js';

const kafka = testKafka('producer-admin');
const admin = new BusAdmin(kafka);
cleanup(() => admin.close());

test('ensureTopic creates once, is idempotent, grows partitions unless told not to, and applies compaction', async () => {
  const topic = `${uniquePrefix('admin')}cards`;
  await admin.ensureTopic(topic, { partitions: 2, compacted: true, retentionMs: 3_600_000 });
  await admin.ensureTopic(topic, { partitions: 2, compacted: true });
  await Promise.all([admin.ensureTopic(topic, { partitions: 3 }), admin.ensureTopic(topic, { partitions: 3 })]);
  const raw = kafka.admin();
  await raw.connect();
  try {
    const meta = await raw.fetchTopicMetadata({ topics: [topic] });
    assert.equal(meta.topics[0].partitions.length, 3);
    // A keyed topic is never grown when asked not to (its keys would move to other partitions).
    await admin.ensureTopic(topic, { partitions: 5, grow: false });
    assert.equal((await raw.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length, 3);
    const cfg = await raw.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: topic }] });
    const entries = Object.fromEntries(cfg.resources[0].configEntries.map((e) => [e.configName, e.configValue]));
    assert.equal(entries['cleanup.policy'], 'compact');
    assert.equal(entries['retention.ms'], '3600000');
  } finally {
    await raw.disconnect();
  }
});

test('concurrent sends are coalesced into few acknowledged requests and carry every contract header', async () => {
  const topic = `${uniquePrefix('producer')}commands`;
  await admin.ensureTopic(topic, { partitions: 2 });
  const producer = new BusProducer(kafka, { lingerMs: 5 });
  cleanup(() => producer.disconnect());
  await producer.connect();
  const sends = Array.from({ length: 200 }, (_, i) => producer.send(topic, `acme:echo`, runCommand('acme', `task-${i % 7}`, i)));
  await Promise.all(sends);
  assert.equal(producer.counters.records, 200);
  assert.ok(producer.counters.requests < 20, `expected batching, got ${producer.counters.requests} requests`);

  const seen: ReturnType<typeof decodeEnvelope>[] = [];
  const consumer = kafka.consumer({ groupId: `${topic}.check` });
  cleanup(() => consumer.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      assert.equal(message.key?.toString(), 'acme:echo');
      seen.push(decodeEnvelope({ headers: message.headers, value: message.value }));
      const h = message.headers ?? {};
      for (const name of [Headers.tenant, Headers.agentId, Headers.taskId, Headers.contextId, Headers.executionId, Headers.traceparent]) {
        assert.ok(h[name], `header ${name}`);
      }
    },
  });
  await eventually('all 200 records consumed', () => seen.length === 200);
  assert.deepEqual(seen.map((e) => e.identity.messageId).sort(), Array.from({ length: 200 }, (_, i) => `task-${i % 7}-${i}`).sort());

  const lag = await eventually('lag reported for the check group', async () => {
    const r = await admin.consumerLag(`${topic}.check`, [topic]);
    return r.length === 2 && r.reduce((n, x) => n + x.lag, 0) === 0 ? r : undefined;
  });
  assert.equal(
    lag.reduce((n, x) => n + Number(x.highWatermark), 0),
    200,
  );
});

test('a send to a topic that was never created fails instead of auto-creating it', async () => {
  const producer = new BusProducer(kafka, { retries: 1 });
  cleanup(() => producer.disconnect());
  await assert.rejects(producer.sendRecord(`${uniquePrefix('missing')}nowhere`, 'k', 'v'));
});

test('consumerLag counts unconsumed records of a group that never committed', async () => {
  const topic = `${uniquePrefix('lag')}events`;
  await admin.ensureTopic(topic, { partitions: 1 });
  const producer = new BusProducer(kafka);
  cleanup(() => producer.disconnect());
  await Promise.all(Array.from({ length: 5 }, (_, i) => producer.sendRecord(topic, 'k', `v${i}`)));
  const report = await admin.consumerLag('no-such-group', [topic]);
  assert.deepEqual(report, [{ groupId: 'no-such-group', topic, partition: 0, committed: null, highWatermark: '5', lag: 5 }]);
});
