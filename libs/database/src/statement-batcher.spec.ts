import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatementBatcher } from './statement-batcher.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

test('items submitted together go in one batch; results come back in order', async () => {
  const batches: number[][] = [];
  const b = new StatementBatcher<number, number>(
    async (items) => {
      batches.push(items);
      return items.map((i) => i * 10);
    },
    { maxBatch: 100, maxInFlight: 1 },
  );
  const out = await Promise.all([1, 2, 3].map((i) => b.submit(i)));
  assert.deepEqual(out, [10, 20, 30]);
  assert.deepEqual(batches, [[1, 2, 3]]);
});

test('items arriving while the slots are busy wait and go together; maxBatch bounds a batch', async () => {
  const gate = deferred();
  const batches: number[][] = [];
  const b = new StatementBatcher<number, number>(
    async (items) => {
      batches.push(items);
      if (batches.length === 1) await gate.promise;
      return items;
    },
    { maxBatch: 2, maxInFlight: 1 },
  );
  const first = b.submit(0);
  await new Promise((r) => setImmediate(r));
  const rest = [1, 2, 3, 4, 5].map((i) => b.submit(i));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(batches, [[0]], 'nothing else starts while the only slot is busy');
  gate.resolve();
  assert.deepEqual(await Promise.all([first, ...rest]), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(batches, [[0], [1, 2], [3, 4], [5]]);
});

test('a failing batch is retried item by item: only the bad item fails', async () => {
  const b = new StatementBatcher<number, number>(
    async (items) => {
      if (items.includes(13)) throw new Error('refused: 13');
      return items;
    },
    { maxBatch: 10, maxInFlight: 2 },
  );
  const results = await Promise.allSettled([11, 12, 13, 14].map((i) => b.submit(i)));
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  assert.match(String((results[2] as PromiseRejectedResult).reason), /refused: 13/);
});

test('a runner that returns the wrong number of results fails its callers, not silently', async () => {
  const b = new StatementBatcher<number, number>(async () => [], { maxBatch: 10, maxInFlight: 1 });
  await assert.rejects(b.submit(1), /returned 0 results for 1 items/);
});
