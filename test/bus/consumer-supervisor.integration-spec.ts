// A kafkajs consumer that crashes with an error kafkajs does not retry leaves its group for good
// while the process stays up: the dispatcher's projector did so during a broker restart, and every
// task stayed WORKING. runSupervised runs it again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import { runSupervised } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('consumer-supervisor');

/** Consumes `topic` from the start; the record at offset 3 throws a non-retriable error once. */
async function crashingConsumer(topic: string, supervised: boolean) {
  const consumer = kafka.consumer({ groupId: `${topic}.group`, maxWaitTimeInMs: 100 });
  let stopping = false;
  cleanup(async () => {
    stopping = true;
    await consumer.disconnect();
  });
  const seen = new Set<string>();
  const crashes: boolean[] = [];
  consumer.on(consumer.events.CRASH, (e) => crashes.push(e.payload.restart));
  let thrown = false;
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const config = {
    eachMessage: async ({ message }: { message: { offset: string } }) => {
      if (message.offset === '3' && !thrown) {
        thrown = true;
        throw new kafkajs.KafkaJSNonRetriableError('not retriable');
      }
      seen.add(message.offset);
    },
  };
  if (supervised) await runSupervised(consumer, config, { stopping: () => stopping, initialBackoffMs: 100 });
  else await consumer.run(config);
  return { seen, crashes };
}

async function tenRecords(label: string): Promise<string> {
  const topic = `${uniquePrefix(label)}events`;
  const { producer } = await testTopic(kafka, topic, 1);
  await producer.connect();
  for (let i = 0; i < 10; i++) await producer.send(topic, 'one-key', runCommand('acme', `task-${i}`, i));
  return topic;
}

test('a consumer kafkajs gave up on is run again and consumes the rest', async () => {
  const { seen, crashes } = await crashingConsumer(await tenRecords('supervised'), true);
  await eventually('all 10 records consumed after the crash', () => seen.size === 10, 30_000);
  // (A broker that just started may first cause crashes kafkajs restarts itself: those are not counted.)
  assert.deepEqual(
    crashes.filter((restarted) => !restarted),
    [false],
    'kafkajs crashed once without restarting the consumer itself',
  );
});

test('without supervision the same crash stops consumption for good', async () => {
  const { seen, crashes } = await crashingConsumer(await tenRecords('unsupervised'), false);
  await eventually('the crash kafkajs does not recover from', () => crashes.includes(false), 30_000);
  await new Promise((r) => setTimeout(r, 3000));
  assert.deepEqual(
    crashes.filter((restarted) => !restarted),
    [false],
  );
  assert.ok(seen.size < 10, `consumption went on without supervision (${seen.size} records)`);
});
