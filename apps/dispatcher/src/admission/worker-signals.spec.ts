import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CachedMeasurement } from './worker-signals.js';

/** A measurement the test settles by hand. */
function gate() {
  let settle!: (lag: number | undefined) => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<number | undefined>((resolve, reject) => ((settle = resolve), (fail = reject)));
  return { promise, settle, fail };
}

test('a backlog measurement is reused for its TTL, then measured again', async () => {
  let now = 0;
  const calls: string[] = [];
  const lags = [3, 7];
  const cache = new CachedMeasurement(
    async (id) => (calls.push(id), lags.shift()),
    undefined,
    1000,
    50,
    () => now,
  );
  assert.equal(await cache.get('a'), 3);
  now = 999;
  assert.equal(await cache.get('a'), 3);
  assert.deepEqual(calls, ['a']);
  now = 1000;
  assert.equal(await cache.get('a'), 7);
  assert.deepEqual(calls, ['a', 'a']);
});

test('an accept waits for a slow measurement only up to its bound, and one measurement runs at a time', { timeout: 10000 }, async () => {
  let now = 0;
  let measurements = 0;
  let pending = gate();
  const cache = new CachedMeasurement(
    () => (measurements++, pending.promise),
    undefined,
    1000,
    20,
    () => now,
  );
  // Kafka down: the measurement hangs; accepts go on with "unknown" after 20 ms, not after the client's retries.
  assert.equal(await cache.get('a'), undefined);
  assert.equal(await cache.get('a'), undefined);
  assert.equal(measurements, 1, 'no pile-up of measurements while one is in flight');
  pending.fail(new Error('KafkaJSNumberOfRetriesExceeded'));
  await new Promise((r) => setImmediate(r));
  now = 1000;
  pending = gate();
  const next = cache.get('a');
  pending.settle(12);
  assert.equal(await next, 12);
  // Stale and slow again: the last known value answers meanwhile.
  now = 2000;
  pending = gate();
  assert.equal(await cache.get('a'), 12);
  pending.settle(0);
  await new Promise((r) => setImmediate(r));
  assert.equal(await cache.get('a'), 0);
});
