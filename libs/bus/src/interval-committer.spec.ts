import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Consumer } from 'kafkajs';
import { IntervalCommitter } from './interval-committer.js';

type Offsets = Array<{ topic: string; partition: number; offset: string }>;

/** The two things IntervalCommitter uses of a kafkajs consumer; commits fail while `failing`. */
function fakeConsumer() {
  const events = new EventEmitter();
  const commits: Offsets[] = [];
  const fake = {
    failing: false,
    commits,
    events: { REBALANCING: 'consumer.rebalancing' },
    on: (name: string, fn: () => void) => events.on(name, fn),
    rebalance: () => events.emit('consumer.rebalancing'),
    async commitOffsets(offsets: Offsets) {
      if (fake.failing) throw new Error('coordinator not available');
      commits.push(offsets);
    },
  };
  return fake;
}

test('a failed commit is retried by the next flush, unless newer offsets or a rebalance replaced it', async () => {
  const consumer = fakeConsumer();
  const committer = new IntervalCommitter(consumer as unknown as Consumer, 3_600_000);
  try {
    committer.processed('t', 0, '4');
    committer.processed('t', 1, '9');
    consumer.failing = true;
    await committer.flush();
    consumer.failing = false;
    committer.processed('t', 1, '10'); // newer than the failed one of partition 1
    await committer.flush();
    assert.deepEqual(
      consumer.commits.pop()?.sort((a, b) => a.partition - b.partition),
      [
        { topic: 't', partition: 0, offset: '5' },
        { topic: 't', partition: 1, offset: '11' },
      ],
    );
    await committer.flush();
    assert.equal(consumer.commits.length, 0, 'nothing left once committed');

    committer.processed('t', 0, '20');
    consumer.failing = true;
    const failing = committer.flush();
    consumer.rebalance(); // the partition may be another member's now
    await failing;
    consumer.failing = false;
    await committer.flush();
    assert.equal(consumer.commits.length, 0, 'offsets read before a rebalance are never committed after it');
  } finally {
    await committer.stop();
  }
});
