import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IntervalCommitter } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('interval-committer');

test('IntervalCommitter: offsets are committed by flush (not per fetched batch), and a rejoined member resumes there', async () => {
  const topic = `${uniquePrefix('committer')}events`;
  const { admin, producer } = await testTopic(kafka, topic, 2);
  await producer.connect();
  await Promise.all(Array.from({ length: 40 }, (_, i) => producer.send(topic, `key-${i % 5}`, runCommand('acme', `task-${i}`, i))));
  const groupId = `${topic}.group`;

  const consume = async (seen: string[]) => {
    const consumer = kafka.consumer({ groupId });
    cleanup(() => consumer.disconnect());
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    // An interval far beyond the test: only flush() and stop() commit.
    const committer = new IntervalCommitter(consumer, 3_600_000);
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic: t, partition, message }) => {
        seen.push(`${partition}/${message.offset}`);
        committer.processed(t, partition, message.offset);
      },
    });
    return { consumer, committer };
  };

  const first: string[] = [];
  const a = await consume(first);
  await eventually('all 40 records consumed', () => first.length >= 40);
  const before = await admin.consumerLag(groupId, [topic]);
  assert.ok(
    before.every((p) => p.committed === null),
    `nothing may be committed before a flush: ${JSON.stringify(before)}`,
  );
  await a.committer.stop();
  const after = await admin.consumerLag(groupId, [topic]);
  assert.equal(after.length, 2);
  for (const p of after) {
    assert.equal(p.committed, p.highWatermark, `partition ${p.partition} committed up to its end`);
    assert.equal(p.lag, 0);
  }
  await a.consumer.disconnect();

  // The group resumes at the committed offsets: only records produced afterwards arrive.
  await producer.send(topic, 'key-late', runCommand('acme', 'task-late', 99));
  const second: string[] = [];
  const b = await consume(second);
  await eventually('the late record consumed', () => second.length >= 1);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(second.length, 1, `only the record after the commit is delivered again: ${second.join(',')}`);
  await b.committer.stop();
  await b.consumer.disconnect();
});
