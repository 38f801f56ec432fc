import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KafkaMessage } from 'kafkajs';
import { anyTransient, Headers, MeshError, normalizeHeaders, TopicNames } from '@mesh/contract';
import { BusConsumer, DeadLetterHeaders, isTransientKafkaError, replayDeadLetters } from '@mesh/bus';
import { isTransientPostgresError } from '@mesh/database';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('dead-letters');

/** Reads every record of a topic from the beginning with a throwaway group. */
async function readAll(topic: string, expected: number): Promise<KafkaMessage[]> {
  const out: KafkaMessage[] = [];
  const consumer = kafka.consumer({ groupId: `${topic}.reader.${Date.now()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void out.push(message) });
    await eventually(`${expected} records in ${topic}`, () => out.length >= expected, 20_000);
    return out;
  } finally {
    await consumer.disconnect();
  }
}

test('poison, non-retryable and exhausted messages go to the DLQ with their headers; others retry; replay puts them back', async () => {
  const prefix = uniquePrefix('dlq');
  const topic = new TopicNames(prefix).commands('echo');
  const dlq = new TopicNames(prefix).deadLetters(topic);
  const { producer } = await testTopic(kafka, topic, 1);

  await producer.send(topic, 'acme:echo', runCommand('acme', 'good', 0));
  await producer.sendRecord(topic, 'acme:echo', '{"not":"an envelope"}', { tenant: 'acme', note: 'poison' });
  await producer.send(topic, 'acme:echo', runCommand('acme', 'refused', 0));
  await producer.send(topic, 'acme:echo', runCommand('acme', 'flaky', 0));
  await producer.send(topic, 'acme:echo', runCommand('acme', 'broken', 0));

  let healed = false;
  const calls = new Map<string, number[]>();
  const handled: string[] = [];
  const reported: string[] = [];
  const consumer = new BusConsumer(kafka, {
    groupId: `${topic}.workers`,
    topics: [topic],
    fromBeginning: true,
    retry: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 50 },
    onDeadLetter: (d) => void reported.push(`${d.topic}:${d.reason}`),
  });
  cleanup(() => consumer.stop());
  await consumer.start(async (env, ctx) => {
    const task = env.identity.taskId;
    calls.set(task, [...(calls.get(task) ?? []), ctx.attempt]);
    if (!healed) {
      if (task === 'refused') throw new MeshError('FORBIDDEN', 'tenant may not use this agent', { retryable: false });
      if (task === 'flaky' && ctx.attempt < 3) throw new Error('temporary');
      if (task === 'broken') throw new Error('always fails');
    }
    handled.push(task);
  });

  const dead = await readAll(dlq, 3);
  assert.equal(dead.length, 3);
  const byOffset = new Map(dead.map((m) => [normalizeHeaders(m.headers)[DeadLetterHeaders.sourceOffset], m]));
  const poison = byOffset.get('1')!;
  const ph = normalizeHeaders(poison.headers);
  assert.equal(poison.value?.toString(), '{"not":"an envelope"}');
  assert.equal(poison.key?.toString(), 'acme:echo');
  assert.equal(ph.note, 'poison', 'original headers kept');
  assert.equal(ph[DeadLetterHeaders.errorCode], 'DECODE_FAILED');
  assert.equal(ph[DeadLetterHeaders.attempts], '0');
  assert.equal(ph[DeadLetterHeaders.sourceTopic], topic);
  assert.equal(ph[DeadLetterHeaders.sourcePartition], '0');

  const refused = normalizeHeaders(byOffset.get('2')!.headers);
  assert.equal(refused[DeadLetterHeaders.errorCode], 'FORBIDDEN');
  assert.equal(refused[DeadLetterHeaders.attempts], '1');
  assert.equal(refused[Headers.taskId], 'refused');
  assert.equal(refused[Headers.traceparent], '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  assert.deepEqual(calls.get('refused'), [1], 'non-retryable errors are not retried');

  const broken = normalizeHeaders(byOffset.get('4')!.headers);
  assert.equal(broken[DeadLetterHeaders.attempts], '3');
  assert.equal(broken[DeadLetterHeaders.error], 'always fails');
  assert.deepEqual(calls.get('broken'), [1, 2, 3]);
  assert.deepEqual(calls.get('flaky'), [1, 2, 3], 'retryable errors are retried until success');
  await eventually('good and flaky handled', () => handled.includes('good') && handled.includes('flaky'));
  assert.equal(consumer.stats().deadLettered, 3);
  // One report per dead letter, after it was written, with its bounded reason (a metric label).
  assert.deepEqual(reported.sort(), [`${topic}:attempts_exhausted`, `${topic}:not_retryable`, `${topic}:undecodable`]);

  // The operator fixed the cause: replay sends the dead letters back to the source topic.
  healed = true;
  assert.equal(await replayDeadLetters(kafka, dlq), 3);
  await eventually('replayed envelopes handled', () => handled.includes('refused') && handled.includes('broken'));
  const replayed = await readAll(topic, 8);
  const replayedRefused = replayed.find((m) => Number(m.offset) >= 5 && normalizeHeaders(m.headers)[Headers.taskId] === 'refused')!;
  const rh = normalizeHeaders(replayedRefused.headers);
  assert.equal(rh[DeadLetterHeaders.error], undefined, 'replay strips the failure headers');
  assert.equal(rh[Headers.executionId], 'acme:refused:0', 'replay keeps the original headers');
  // Progress is remembered: nothing new to replay (the poison record went back to the DLQ again).
  await eventually('poison dead-lettered again', async () => (await readAll(dlq, 4)).length === 4);
  assert.equal(await replayDeadLetters(kafka, dlq, { limit: 0 }), 0);
});

test('a dead letter that cannot be written keeps its record unfinished until the write succeeds', async () => {
  const topic = `${uniquePrefix('dlq-down')}commands`;
  const dlq = new TopicNames().deadLetters(topic);
  const { admin, producer } = await testTopic(kafka, topic, 1);
  await producer.sendRecord(topic, 'acme:echo', 'not an envelope');
  await producer.send(topic, 'acme:echo', runCommand('acme', 'after', 0));

  const errors: string[] = [];
  const handled: string[] = [];
  const groupId = `${topic}.workers`;
  const consumer = new BusConsumer(kafka, {
    groupId,
    topics: [topic],
    fromBeginning: true,
    // The dead-letter topic is missing on purpose, and the producer gives up fast.
    ensureDeadLetterTopics: false,
    deadLetterProducer: { retries: 1 },
    onError: (_err, what) => void errors.push(what),
  });
  cleanup(() => consumer.stop());
  await consumer.start(async (env) => void handled.push(env.identity.taskId));
  await eventually('dead-letter write failed twice', () => errors.filter((e) => e === 'dead-letter send').length >= 2);
  await eventually('the next record was handled meanwhile', () => handled.includes('after'));
  // A commit round ran after the later record finished: it may only commit the poison record's offset.
  await eventually('a commit round', () => consumer.stats().commits >= 1);
  const stuck = await admin.consumerLag(groupId, [topic]);
  assert.ok(
    stuck.every((l) => l.committed === null || l.committed === '0'),
    `committed past the unwritten dead letter: ${JSON.stringify(stuck)}`,
  );

  await admin.ensureTopic(dlq, { partitions: 1 });
  const [letter] = await readAll(dlq, 1);
  assert.equal(letter.value?.toString(), 'not an envelope');
  await eventually('committed past both records once the dead letter was written', async () => {
    const [lag] = await admin.consumerLag(groupId, [topic]);
    return lag?.committed === '2';
  });
  assert.equal(consumer.stats().deadLettered, 1);
});

test('a dependency that is briefly unreachable (e.g. Postgres restarting) never sends good work to the DLQ', async () => {
  const prefix = uniquePrefix('dlq-transient');
  const topic = new TopicNames(prefix).commands('echo');
  const { producer } = await testTopic(kafka, topic, 1);
  await producer.send(topic, 'acme:echo', runCommand('acme', 'db-down', 0));
  await producer.send(topic, 'acme:echo', runCommand('acme', 'next', 0));

  const calls: number[] = [];
  const handled: string[] = [];
  const consumer = new BusConsumer(kafka, {
    groupId: `${topic}.workers`,
    topics: [topic],
    fromBeginning: true,
    retry: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 50 },
    // As the apps whose handlers write to Postgres configure it.
    isTransient: anyTransient(isTransientKafkaError, isTransientPostgresError),
  });
  cleanup(() => consumer.stop());
  await consumer.start(async (env, ctx) => {
    if (env.identity.taskId === 'db-down') {
      calls.push(ctx.attempt);
      // Twice the dead-letter limit: refused connections, then the server's shutdown notice.
      if (ctx.attempt <= 3) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      if (ctx.attempt <= 6) throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    }
    handled.push(env.identity.taskId);
  });
  await eventually('both handled', () => handled.length === 2);
  assert.deepEqual(handled.sort(), ['db-down', 'next']);
  assert.deepEqual(calls, [1, 2, 3, 4, 5, 6, 7]);
  assert.equal(consumer.stats().deadLettered, 0);
});
