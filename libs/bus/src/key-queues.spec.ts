import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KeyQueues } from './key-queues.js';

interface Item {
  key: string;
  seq: number;
}

test('one item per key runs at a time; other keys proceed', () => {
  const q = new KeyQueues<Item>((i) => i.key);
  q.push({ key: 'a', seq: 0 });
  q.push({ key: 'a', seq: 1 });
  q.push({ key: 'b', seq: 2 });
  const first = q.take()!;
  const second = q.take()!;
  assert.deepEqual([first.seq, second.seq], [0, 2]);
  assert.equal(q.take(), undefined, 'a:1 waits for a:0');
  q.done(first);
  assert.equal(q.take()?.seq, 1);
  assert.equal(q.running, 2);
  assert.equal(q.waiting, 0);
});

test('takeMore starts the following items of a running key, in order, up to max and while accepted', () => {
  const q = new KeyQueues<Item>((i) => i.key);
  for (const seq of [0, 1, 2, 3, 4]) q.push({ key: 'a', seq });
  q.push({ key: 'b', seq: 9 });
  const first = q.take()!;
  assert.deepEqual(
    q.takeMore(first, 2, () => true).map((i) => i.seq),
    [1, 2],
  );
  assert.deepEqual(
    q.takeMore(first, 5, (i) => i.seq !== 4).map((i) => i.seq),
    [3],
    'stops at the first item not accepted',
  );
  assert.equal(q.waiting, 2);
  assert.equal(q.take()?.seq, 9, 'a stays running: only b may start');
  assert.equal(q.take(), undefined);
  q.done(first);
  assert.equal(q.take()?.seq, 4, 'after done, the key goes on with the item left behind');
  assert.throws(() => q.takeMore({ key: 'c', seq: 0 }, 1, () => true), /no running item/);
});

test('admit skips items that may not start yet without losing their turn', () => {
  const q = new KeyQueues<Item>((i) => i.key);
  q.push({ key: 'a', seq: 0 });
  q.push({ key: 'b', seq: 1 });
  assert.equal(q.take((i) => i.key !== 'a')?.seq, 1);
  assert.equal(
    q.take((i) => i.key !== 'a'),
    undefined,
  );
  assert.equal(q.take()?.seq, 0);
});

test('removeWaiting drops queued items but leaves running ones', () => {
  const q = new KeyQueues<Item>((i) => i.key);
  q.push({ key: 'a', seq: 0 });
  q.push({ key: 'a', seq: 1 });
  q.push({ key: 'b', seq: 2 });
  const running = q.take()!;
  assert.deepEqual(
    q.removeWaiting(() => true).map((i) => i.seq),
    [1, 2],
  );
  assert.equal(q.take(), undefined);
  q.done(running);
  assert.equal(q.running, 0);
  assert.throws(() => q.done(running));
});

test('property: every item runs once, per key in push order, never two of a key at once', () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 200 }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 50 }),
      (keys, choices) => {
        const q = new KeyQueues<Item>((i) => i.key);
        keys.forEach((key, seq) => q.push({ key, seq }));
        const running: Item[] = [];
        const seen = new Map<string, number>();
        let c = 0;
        let finished = 0;
        while (finished < keys.length) {
          // Start as many as the choice says, then finish a chosen running item.
          const starts = choices[c++ % choices.length] % 4;
          for (let i = 0; i < starts; i++) {
            const item = q.take();
            if (!item) break;
            assert.ok(!running.some((r) => r.key === item.key), `two of key ${item.key} at once`);
            assert.ok((seen.get(item.key) ?? -1) < item.seq, 'out of order');
            seen.set(item.key, item.seq);
            running.push(item);
          }
          if (running.length === 0) {
            const item = q.take();
            assert.ok(item, 'an item must be startable when nothing runs');
            running.push(item);
            seen.set(item.key, item.seq);
          }
          const idx = choices[c++ % choices.length] % running.length;
          q.done(running.splice(idx, 1)[0]);
          finished++;
        }
        assert.equal(q.waiting, 0);
        assert.equal(q.running, 0);
      },
    ),
    { numRuns: 200 },
  );
});
