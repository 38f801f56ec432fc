import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopicReader } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('topic-reader');

async function topicWith(label: string, records: number, partitions = 2) {
  const topic = `${uniquePrefix(label)}records`;
  const { admin, producer } = await testTopic(kafka, topic, partitions);
  await producer.connect();
  await Promise.all(Array.from({ length: records }, (_, i) => producer.sendRecord(topic, `k-${i % 7}`, `r-${i}`)));
  return { topic, admin, producer };
}

test('per-replica readers each read the whole topic, caught up once start resolves, and delete their groups on stop', async () => {
  const { topic, admin } = await topicWith('reader-replicas', 30);
  const seen: string[][] = [[], []];
  const readers = seen.map(
    () =>
      new TopicReader(kafka, {
        topic,
        group: (id) => `${topic}.replica.${id}`,
        fromBeginning: true,
        commits: 'none',
        consumerConfig: { maxWaitTimeInMs: 100 },
      }),
  );
  readers.forEach((r) => cleanup(() => r.stop()));
  assert.notEqual(readers[0]!.groupId, readers[1]!.groupId, 'a fresh group per replica');
  await Promise.all(
    readers.map((r, i) => r.start({ eachMessage: async ({ message }) => void seen[i]!.push(String(message.value)) }, 'caught-up')),
  );
  for (const s of seen) assert.equal(new Set(s).size, 30, 'every record, already when start resolved');

  for (const r of readers) {
    assert.notEqual((await admin.describeGroup(r.groupId)).state, 'Dead');
    await r.stop();
    await eventually(`group ${r.groupId} deleted`, async () => (await admin.describeGroup(r.groupId)).state === 'Dead');
  }
});

test('interval commits: a shared reader commits what it handled, and the next reader of the group goes on from there', async () => {
  const { topic, admin, producer } = await topicWith('reader-commits', 20);
  const group = `${topic}.shared`;
  const first: string[] = [];
  const a = new TopicReader(kafka, {
    topic,
    group,
    fromBeginning: true,
    commits: { everyMs: 3_600_000 },
    consumerConfig: { maxWaitTimeInMs: 100 },
  });
  cleanup(() => a.stop());
  await a.start({ eachBatch: async ({ messages }) => void first.push(...messages.map((m) => String(m.value))) });
  await eventually('20 records read', () => first.length >= 20);
  await a.stop();
  const lag = await admin.consumerLag(group, [topic]);
  assert.ok(
    lag.every((p) => p.lag === 0),
    `stop commits everything handled: ${JSON.stringify(lag)}`,
  );
  assert.notEqual((await admin.describeGroup(group)).state, 'Dead', 'a shared group is kept');

  await producer.sendRecord(topic, 'k-new', 'r-new');
  const second: string[] = [];
  const b = new TopicReader(kafka, { topic, group, fromBeginning: true, commits: 'per-batch', consumerConfig: { maxWaitTimeInMs: 100 } });
  cleanup(() => b.stop());
  await b.start({ eachMessage: async ({ message }) => void second.push(String(message.value)) }, 'joined');
  await eventually('the new record read', () => second.includes('r-new'));
  assert.deepEqual(second, ['r-new'], 'nothing committed is read again');
  await b.stop();
});
