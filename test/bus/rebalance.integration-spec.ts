import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusConsumer, type BusConsumerOptions, type EnvelopeHandler } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('rebalance');

test('a second consumer joins mid-stream: nothing is lost, both get work, the group ends fully committed', async () => {
  const topic = `${uniquePrefix('rebalance')}commands`;
  const { admin, producer } = await testTopic(kafka, topic, 4);
  const total = 2000;
  const produce = (from: number, to: number) =>
    Promise.all(
      Array.from({ length: to - from }, (_, j) =>
        producer.send(topic, `acme:agent-${(from + j) % 8}`, runCommand('acme', `task-${(from + j) % 40}`, from + j)),
      ),
    );

  const seen = new Map<string, Set<number>>([
    ['a', new Set()],
    ['b', new Set()],
  ]);
  const handler =
    (who: string): EnvelopeHandler =>
    async (env) => {
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
      if (env.kind === 'task.run') seen.get(who)!.add(env.body.turn);
    };
  const options: BusConsumerOptions = {
    groupId: `${topic}.workers`,
    topics: [topic],
    fromBeginning: true,
    maxInFlight: 8,
    drainTimeoutMs: 5000,
    consumerConfig: { sessionTimeout: 10_000, heartbeatInterval: 500 },
  };
  await produce(0, total / 2);
  const a = new BusConsumer(kafka, options);
  cleanup(() => a.stop());
  await a.start(handler('a'));
  await eventually('a is working', () => seen.get('a')!.size >= 100);

  const b = new BusConsumer(kafka, options);
  cleanup(() => b.stop());
  const bJoined = b.start(handler('b'));
  await produce(total / 2, total);
  await bJoined;

  const all = () => new Set([...seen.get('a')!, ...seen.get('b')!]);
  await eventually('every message handled by someone', () => all().size === total, 60_000, 100);
  assert.ok(seen.get('b')!.size > 0, 'the second consumer got partitions');
  assert.ok(a.stats().rebalances >= 1, 'the first consumer went through a rebalance');
  assert.equal(a.stats().assignedPartitions + b.stats().assignedPartitions, 4, 'the group assigned every partition to one of them');

  await Promise.all([a.stop(), b.stop()]);
  const lag = await admin.consumerLag(options.groupId, [topic]);
  assert.equal(lag.length, 4);
  assert.equal(
    lag.reduce((n, l) => n + l.lag, 0),
    0,
    `lag after stop: ${JSON.stringify(lag)}`,
  );
});

test('a consumer counts the partitions assigned to it, also before any of them delivered a record', async () => {
  const topic = `${uniquePrefix('assigned')}commands`;
  await testTopic(kafka, topic, 3);
  const idle = new BusConsumer(kafka, { groupId: `${topic}.workers`, topics: [topic], fromBeginning: true, maxInFlight: 1 });
  cleanup(() => idle.stop());
  await idle.start(async () => undefined);
  await eventually('assigned at join', () => idle.stats().assignedPartitions === 3);
  assert.equal(idle.stats().processed, 0, 'no record arrived');
});
