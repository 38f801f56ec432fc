import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusConsumer, type BusConsumerOptions } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('finished-offsets');

/**
 * One partition whose records of the `stuck-*` tasks never finish under the first owner (they
 * wait for the drain to abort them) while everything else does; then a second owner takes over.
 * Returns what each owner ran, by offset, and the second owner's stats.
 */
async function handOver(name: string, total: number, stuckEvery: number, extra: Partial<BusConsumerOptions> = {}) {
  const topic = `${uniquePrefix(name)}commands`;
  const { admin, producer } = await testTopic(kafka, topic, 1);
  const task = (o: number) => (o % stuckEvery === 0 ? `stuck-${o}` : `task-${o}`);
  for (let o = 0; o < total; o += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, total - o) }, (_, i) => o + i).map((n) =>
        producer.send(topic, 'acme:echo', runCommand('acme', task(n), n)),
      ),
    );
  }
  const options: BusConsumerOptions = {
    groupId: `${topic}.workers`,
    topics: [topic],
    fromBeginning: true,
    drainTimeoutMs: 300,
    commitIntervalMs: 100,
    maxInFlight: 256,
    ...extra,
  };
  const firstRan = new Set<number>();
  const first = new BusConsumer(kafka, options);
  cleanup(() => first.stop());
  await first.start(async (_env, ctx) => {
    const o = Number(ctx.offset);
    if (o % stuckEvery === 0) {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      throw new Error('aborted by the drain');
    }
    firstRan.add(o);
  });
  const finishedByFirst = total - Math.ceil(total / stuckEvery);
  await eventually('the first owner finished everything but the stuck records', () => firstRan.size === finishedByFirst, 30_000);
  await first.stop();
  const [atHandOver] = await admin.consumerLag(options.groupId, [topic]);
  assert.equal(atHandOver.committed, '0', 'the commit cannot pass the stuck record at offset 0');

  const secondRan: number[] = [];
  const second = new BusConsumer(kafka, options);
  cleanup(() => second.stop());
  await second.start(async (_env, ctx) => void secondRan.push(Number(ctx.offset)));
  await eventually('the second owner committed everything', async () => {
    const [lag] = await admin.consumerLag(options.groupId, [topic]);
    return lag.committed === String(total);
  });
  const stats = second.stats();
  await second.stop();
  return { firstRan, secondRan, stats };
}

test('a new owner skips the records finished above the commit, and runs only the unfinished ones', async () => {
  const total = 300;
  const { secondRan, stats } = await handOver('fo-skip', total, 100);
  assert.deepEqual(secondRan, [0, 100, 200], 'only the records the first owner never finished');
  assert.equal(stats.skippedFinished, total - 3);
  assert.equal(stats.processed, 3);
});

test('metadata that does not fit is cut: what it leaves out runs again, nothing is skipped that did not finish', async () => {
  const total = 200;
  // Runs of 9 finished offsets between stuck ones: about 6 characters each, so 40 carry a few.
  const { firstRan, secondRan, stats } = await handOver('fo-cut', total, 10, { commitMetadataMaxChars: 40 });
  const stuck = Array.from({ length: total / 10 }, (_, i) => i * 10);
  for (const o of stuck) assert.ok(secondRan.includes(o), `unfinished offset ${o} ran again`);
  for (let o = 0; o < total; o++) assert.ok(firstRan.has(o) || secondRan.includes(o), `offset ${o} never ran`);
  assert.ok(stats.skippedFinished > 0, 'the runs that fit were skipped');
  assert.ok(secondRan.length > stuck.length, 'the runs that did not fit ran again');
  assert.equal(stats.skippedFinished + secondRan.length, total);
});

test('commitMetadataMaxChars: 0 turns it off: everything from the commit runs again', async () => {
  const total = 100;
  const { secondRan, stats } = await handOver('fo-off', total, 100, { commitMetadataMaxChars: 0 });
  assert.equal(secondRan.length, total);
  assert.equal(stats.skippedFinished, 0);
});
