import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusAdmin, BusConsumer } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('ordering');

/** A one-partition topic holding `perTask` commands of each of `tasks` tasks, interleaved (turn = seq). */
async function interleavedTopic(label: string, tasks: number, perTask: number): Promise<{ topic: string; admin: BusAdmin }> {
  const topic = `${uniquePrefix(label)}commands`;
  const { admin, producer } = await testTopic(kafka, topic, 1);
  const sends: Promise<void>[] = [];
  for (let seq = 0; seq < perTask; seq++) {
    for (let t = 0; t < tasks; t++) sends.push(producer.send(topic, 'acme:echo', runCommand('acme', `task-${t}`, seq)));
  }
  await Promise.all(sends);
  return { topic, admin };
}

test('tasks interleaved on one partition: each task in order, never two of a task at once, tasks overlap', async () => {
  const tasks = 20;
  const perTask = 25;
  const { topic, admin } = await interleavedTopic('ordering', tasks, perTask);

  const seen = new Map<string, number[]>();
  const running = new Set<string>();
  let maxConcurrentTasks = 0;
  let violations = 0;
  const groupId = `${topic}.workers`;
  const consumer = new BusConsumer(kafka, { groupId, topics: [topic], fromBeginning: true, maxInFlight: 16 });
  cleanup(() => consumer.stop());
  await consumer.start(async (env) => {
    const task = env.identity.taskId;
    if (running.has(task)) violations++;
    running.add(task);
    maxConcurrentTasks = Math.max(maxConcurrentTasks, running.size);
    await new Promise((r) => setTimeout(r, 1 + Math.random() * 4));
    running.delete(task);
    const list = seen.get(task) ?? [];
    list.push(env.kind === 'task.run' ? env.body.turn : -1);
    seen.set(task, list);
  });
  await eventually('all messages handled', () => [...seen.values()].reduce((n, l) => n + l.length, 0) === tasks * perTask, 30_000);
  assert.equal(violations, 0, 'two messages of one task ran at once');
  for (const [task, list] of seen) assert.deepEqual(list, [...Array(perTask).keys()], `order of ${task}`);
  assert.ok(maxConcurrentTasks > 1, `different tasks should overlap, max concurrency was ${maxConcurrentTasks}`);
  assert.ok(consumer.stats().inFlight <= 16);

  await consumer.stop();
  const lag = await admin.consumerLag(groupId, [topic]);
  assert.deepEqual(
    lag.map((l) => [l.committed, l.lag]),
    [[String(tasks * perTask), 0]],
  );
});

test('startBatches: queued records of a key come together, in order; a failing batch is handled one at a time; all committed', async () => {
  const tasks = 10;
  const perTask = 30;
  // Everything is on the broker before the consumer starts, so keys have records queued behind them.
  const { topic, admin } = await interleavedTopic('batches', tasks, perTask);

  const seen = new Map<string, number[]>();
  const running = new Set<string>();
  const sizes: number[] = [];
  let violations = 0;
  let mixedKeys = 0;
  let failedBatches = 0;
  const groupId = `${topic}.workers`;
  const consumer = new BusConsumer(kafka, {
    groupId,
    topics: [topic],
    fromBeginning: true,
    maxInFlight: 4,
    maxBatchPerKey: 8,
    retry: { initialBackoffMs: 10, maxBackoffMs: 20 },
  });
  cleanup(() => consumer.stop());
  await consumer.startBatches(async (records) => {
    const task = records[0].envelope.identity.taskId;
    if (records.some((r) => r.envelope.identity.taskId !== task)) mixedKeys++;
    if (running.has(task)) violations++;
    running.add(task);
    try {
      await new Promise((r) => setTimeout(r, 2));
      // Every batch holding turn 7 of a task fails once as a whole: its records come back one by one.
      if (records.length > 1 && records.some((r) => r.envelope.kind === 'task.run' && r.envelope.body.turn === 7)) {
        failedBatches++;
        throw new Error('injected batch failure');
      }
      sizes.push(records.length);
      const list = seen.get(task) ?? [];
      for (const r of records) list.push(r.envelope.kind === 'task.run' ? r.envelope.body.turn : -1);
      seen.set(task, list);
    } finally {
      running.delete(task);
    }
  });
  await eventually('all messages handled', () => [...seen.values()].reduce((n, l) => n + l.length, 0) >= tasks * perTask, 30_000);
  assert.equal(violations, 0, 'two batches of one task ran at once');
  assert.equal(mixedKeys, 0, 'a batch held records of two keys');
  for (const [task, list] of seen) assert.deepEqual(list, [...Array(perTask).keys()], `order of ${task}, each record once`);
  assert.ok(Math.max(...sizes) > 1, `queued records of a key should come together (sizes ${sizes.join(',')})`);
  assert.ok(Math.max(...sizes) <= 8, 'never more than maxBatchPerKey');
  assert.ok(failedBatches > 0, 'the failure path ran');
  assert.ok(sizes.filter((n) => n === 1).length >= failedBatches, 'a failed batch was handled again one record at a time');
  assert.equal(consumer.stats().processed, tasks * perTask);

  await consumer.stop();
  const lag = await admin.consumerLag(groupId, [topic]);
  assert.deepEqual(
    lag.map((l) => [l.committed, l.lag]),
    [[String(tasks * perTask), 0]],
  );
});
