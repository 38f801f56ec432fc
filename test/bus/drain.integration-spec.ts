import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusConsumer, createKafka, type BusConsumerOptions } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('drain');

test('stop() lets running work finish within the drain timeout, aborts the rest and commits only below it', async () => {
  const topic = `${uniquePrefix('drain')}commands`;
  const { admin, producer } = await testTopic(kafka, topic, 1);
  // offsets: 0 quick, 1 slow-but-within-drain, 2 stuck until aborted, 3 quick
  for (const task of ['quick-a', 'slow', 'stuck', 'quick-b']) await producer.send(topic, 'acme:echo', runCommand('acme', task, 0));

  const options: BusConsumerOptions = { groupId: `${topic}.workers`, topics: [topic], fromBeginning: true, drainTimeoutMs: 3000 };
  const started = new Set<string>();
  const finished: string[] = [];
  let stuckAborted = false;
  const first = new BusConsumer(kafka, options);
  cleanup(() => first.stop());
  await first.start(async (env, ctx) => {
    const task = env.identity.taskId;
    started.add(task);
    if (task === 'slow') await new Promise((r) => setTimeout(r, 100));
    if (task === 'stuck') {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      stuckAborted = true;
      throw new Error('aborted by drain');
    }
    finished.push(task);
  });
  await eventually('all four started and the quick ones finished', () => started.size === 4 && finished.includes('quick-b'));
  assert.ok(!finished.includes('slow'), 'slow is still running when stop() begins');
  await first.stop();
  assert.ok(finished.includes('slow'), 'work that finishes within the drain timeout is waited for');
  assert.ok(stuckAborted, 'work past the drain timeout sees its signal aborted');
  const [lag] = await admin.consumerLag(options.groupId, [topic]);
  assert.equal(lag.committed, '2', 'committed up to the aborted record, not past it');
  assert.equal(first.stats().deadLettered, 0, 'aborted work is not dead-lettered');

  // The next owner gets the aborted record again; the one after it finished, and the commit's
  // metadata says so.
  const again: string[] = [];
  const second = new BusConsumer(kafka, options);
  cleanup(() => second.stop());
  await second.start(async (env) => void again.push(env.identity.taskId));
  await eventually('redelivered', () => again.length === 1 && second.stats().skippedFinished === 1);
  assert.deepEqual(again, ['stuck']);
  await second.stop();
  const [after] = await admin.consumerLag(options.groupId, [topic]);
  assert.equal(after.committed, '4');
});

test('a handler that returns (not throws) after its signal was aborted has not finished: not counted, and the next owner runs it', async () => {
  // The agents' turn runner does this on a revocation: it gives the execution up and returns.
  const topic = `${uniquePrefix('drain-return')}commands`;
  const { admin, producer } = await testTopic(kafka, topic, 1);
  for (const task of ['gives-up', 'quick']) await producer.send(topic, 'acme:echo', runCommand('acme', task, 0));
  const options: BusConsumerOptions = { groupId: `${topic}.workers`, topics: [topic], fromBeginning: true, drainTimeoutMs: 300 };
  const ran: string[] = [];
  const first = new BusConsumer(kafka, options);
  cleanup(() => first.stop());
  await first.start(async (env, ctx) => {
    ran.push(env.identity.taskId);
    if (env.identity.taskId === 'gives-up') await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  });
  await eventually('both started', () => ran.length === 2);
  await first.stop();
  assert.equal(first.stats().processed, 1, 'only the record that finished before the abort counts');
  const [lag] = await admin.consumerLag(options.groupId, [topic]);
  assert.equal(lag.committed, '0');

  const again: string[] = [];
  const second = new BusConsumer(kafka, options);
  cleanup(() => second.stop());
  await second.start(async (env) => void again.push(env.identity.taskId));
  await eventually('the abandoned record again, and only it', () => again.length === 1 && second.stats().skippedFinished === 1);
  await second.stop();
  assert.deepEqual(again, ['gives-up']);
});

test('start() fails clearly when no broker answers, and stop() after that still resolves', async () => {
  const nowhere = createKafka({ brokers: ['127.0.0.1:1'], clientId: 'test-nowhere', retries: 0, connectionTimeoutMs: 300 });
  const consumer = new BusConsumer(nowhere, { groupId: 'g', topics: ['nowhere.commands'] });
  await assert.rejects(
    consumer.start(async () => {}),
    /connect|ECONNREFUSED|Connection/i,
  );
  await consumer.stop();
  assert.equal(consumer.stats().inFlight, 0);
});
