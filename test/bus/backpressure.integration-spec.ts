import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusConsumer } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('backpressure');

test('slow handler, big backlog: in-flight and per-tenant limits hold, partitions pause and resume, buffer and heap stay bounded', async () => {
  const topic = `${uniquePrefix('backpressure')}commands`;
  // Small record batches: a fetch returns at least one whole record batch whatever maxBytesPerPartition says.
  const { producer } = await testTopic(kafka, topic, 2, { maxBatchBytes: 32 * 1024 });
  const total = 3000;
  const padding = 'x'.repeat(1000);
  await Promise.all(
    Array.from({ length: total }, (_, i) => {
      const cmd = runCommand(i % 3 === 0 ? 'globex' : 'acme', `task-${i}`, i);
      cmd.body.message = { ...cmd.body.message, padding };
      return producer.send(topic, `k${i % 2}`, cmd);
    }),
  );

  const maxInFlight = 8;
  const perTenantInFlight = 5;
  const maxBuffered = 100;
  // One fetch may land on top of a full buffer: at most one batch per partition of maxBytesPerPartition.
  const maxBytesPerPartition = 64 * 1024;
  const bufferBound = maxBuffered + 2 * Math.ceil(maxBytesPerPartition / 1000);
  let inFlight = 0;
  let maxSeen = 0;
  const perTenant = new Map<string, number>();
  let maxPerTenant = 0;
  let maxBufferedSeen = 0;
  let sawPause = false;
  let handled = 0;
  const heapStart = process.memoryUsage().heapUsed;
  let heapMax = heapStart;
  const consumer = new BusConsumer(kafka, {
    groupId: `${topic}.workers`,
    topics: [topic],
    fromBeginning: true,
    maxInFlight,
    perTenantInFlight,
    maxBuffered,
    consumerConfig: { maxBytesPerPartition },
  });
  cleanup(() => consumer.stop());
  await consumer.start(async (env) => {
    const t = env.identity.tenant;
    inFlight++;
    perTenant.set(t, (perTenant.get(t) ?? 0) + 1);
    maxSeen = Math.max(maxSeen, inFlight);
    maxPerTenant = Math.max(maxPerTenant, perTenant.get(t)!);
    const s = consumer.stats();
    maxBufferedSeen = Math.max(maxBufferedSeen, s.buffered);
    sawPause ||= s.pausedPartitions > 0;
    if (handled % 100 === 0) heapMax = Math.max(heapMax, process.memoryUsage().heapUsed);
    await new Promise((r) => setTimeout(r, 3));
    perTenant.set(t, perTenant.get(t)! - 1);
    inFlight--;
    handled++;
  });
  await eventually('backlog drained', () => handled === total, 60_000, 100);
  assert.ok(maxSeen <= maxInFlight, `in-flight reached ${maxSeen}`);
  assert.equal(maxSeen, maxInFlight, 'the limit was used fully');
  assert.ok(maxPerTenant <= perTenantInFlight, `a tenant had ${maxPerTenant} in flight`);
  assert.ok(sawPause, 'partitions were paused while the buffer was full');
  assert.ok(maxBufferedSeen <= bufferBound, `buffer reached ${maxBufferedSeen} (bound ${bufferBound})`);
  assert.ok(heapMax - heapStart < 64 * 1024 * 1024, `heap grew by ${Math.round((heapMax - heapStart) / 1048576)} MiB`);
  await eventually('all partitions resumed', () => consumer.stats().pausedPartitions === 0);
});
