import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OffsetTracker } from './offset-tracker.js';

test('commits stop at the lowest unfinished offset and jump once it finishes', () => {
  const t = new OffsetTracker();
  assert.equal(t.committable(), undefined);
  for (const o of [10, 11, 12, 15]) t.add(o);
  assert.equal(t.committable(), 10);
  t.complete(11);
  t.complete(15);
  assert.equal(t.committable(), 10);
  t.complete(10);
  assert.equal(t.committable(), 12);
  t.complete(12);
  assert.equal(t.committable(), 16);
  assert.equal(t.unfinished, 0);
});

test('rejects offsets out of order and completions of unknown or finished offsets', () => {
  const t = new OffsetTracker();
  t.add(5);
  assert.throws(() => t.add(5), RangeError);
  assert.throws(() => t.add(3), RangeError);
  assert.throws(() => t.complete(4), RangeError);
  assert.throws(() => t.complete(6), RangeError);
  t.complete(5);
  assert.throws(() => t.complete(5), RangeError);
});

test('property: the committable offset never passes an unfinished offset and reaches the end when all finish', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.nat({ max: 5000 }), { minLength: 1, maxLength: 300 }).chain((offsets) => {
        const sorted = [...offsets].sort((a, b) => a - b);
        return fc.tuple(fc.constant(sorted), fc.shuffledSubarray(sorted, { minLength: sorted.length, maxLength: sorted.length }));
      }),
      ([received, completionOrder]) => {
        const t = new OffsetTracker();
        for (const o of received) t.add(o);
        const done = new Set<number>();
        for (const o of completionOrder) {
          t.complete(o);
          done.add(o);
          const c = t.committable()!;
          // Everything below the commit point is finished, and the commit point itself is not.
          for (const r of received) if (r < c) assert.ok(done.has(r), `commit ${c} passed unfinished ${r}`);
          if (c <= received[received.length - 1]) assert.ok(!done.has(c) && received.includes(c));
          assert.equal(t.unfinished, received.length - done.size);
        }
        assert.equal(t.committable(), received[received.length - 1] + 1);
      },
    ),
    { numRuns: 200 },
  );
});

test('compaction keeps working over long histories', () => {
  const t = new OffsetTracker();
  for (let i = 0; i < 10_000; i++) {
    t.add(i);
    if (i >= 3) t.complete(i - 3);
  }
  assert.equal(t.committable(), 9997);
  assert.ok(t.isOutstanding(9998));
  assert.ok(!t.isOutstanding(10));
});
