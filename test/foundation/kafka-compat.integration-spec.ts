// Proves kafkajs 2.2.4 works against the pinned broker (Apache Kafka 4.4.0, KRaft): admin topic
// creation, produce with key and headers, consume in a group, commit, and transactions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EachMessagePayload } from 'kafkajs';
import { createKafka } from '@mesh/bus';
import { encodeEnvelope, Envelopes, decodeEnvelope } from '@mesh/contract';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';

const kafka = () => createKafka({ brokers: testRun().brokers, clientId: 'foundation-test' });

test('admin creates topics; a message round-trips with key, headers and offsets; commits are stored', async () => {
  const topic = `${uniquePrefix('roundtrip')}roundtrip`;
  const k = kafka();
  const admin = k.admin();
  await admin.connect();
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true }), true);
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  assert.equal(meta.topics[0].partitions.length, 3);

  const producer = k.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const env = Envelopes.run(
    {
      tenant: 'acme',
      agentId: 'echo-agent',
      taskId: 'task-1',
      contextId: 'ctx-1',
      messageId: 'msg-1',
      executionId: 'acme:task-1:0',
      subject: 'alice',
      actor: 'test',
      deadlineUnixMs: Date.now() + 60000,
    },
    { turn: 0, message: { parts: [{ text: 'hi' }] } },
  );
  const wire = encodeEnvelope(env);
  const sent = [];
  for (let i = 0; i < 3; i++) {
    sent.push(
      ...(await producer.send({ topic, acks: -1, messages: [{ key: 'acme:echo-agent', value: wire.value, headers: wire.headers }] })),
    );
  }
  // Same key → same partition, consecutive offsets.
  assert.equal(new Set(sent.map((r) => r.partition)).size, 1);
  const partition = sent[0].partition;
  assert.deepEqual(
    sent.map((r) => Number(r.baseOffset)),
    [0, 1, 2],
  );

  const groupId = `${topic}.group`;
  const consumer = k.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen: EachMessagePayload[] = [];
  await consumer.run({ autoCommit: false, eachMessage: async (p) => void seen.push(p) });
  await eventually('3 messages', () => seen.length >= 3);
  assert.deepEqual(
    seen.map((p) => [p.partition, p.message.offset, p.message.key?.toString()]),
    [
      [partition, '0', 'acme:echo-agent'],
      [partition, '1', 'acme:echo-agent'],
      [partition, '2', 'acme:echo-agent'],
    ],
  );
  assert.deepEqual(decodeEnvelope({ headers: seen[0].message.headers, value: seen[0].message.value }), env);
  await consumer.commitOffsets([{ topic, partition, offset: '3' }]);
  await consumer.disconnect();
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  assert.equal(committed[0].partitions.find((p) => p.partition === partition)?.offset, '3');
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
});

test('transactions: committed messages are visible to read_committed consumers, aborted ones are not', async () => {
  const topic = `${uniquePrefix('tx')}tx`;
  const k = kafka();
  const admin = k.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  const producer = k.producer({ transactionalId: `${topic}.tx`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const aborted = await producer.transaction();
  await aborted.send({ topic, messages: [{ key: 'k', value: 'aborted' }] });
  await aborted.abort();
  const tx = await producer.transaction();
  await tx.send({ topic, messages: [{ key: 'k', value: 'committed' }] });
  await tx.commit();

  const consumer = k.consumer({ groupId: `${topic}.group`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values: string[] = [];
  await consumer.run({ eachMessage: async ({ message }) => void values.push(String(message.value)) });
  await eventually('the committed message', () => values.includes('committed'));
  assert.deepEqual(values, ['committed']);
  await consumer.disconnect();
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
});
