import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Consumer } from 'kafkajs';
import { runSupervised } from './consumer-supervisor.js';

/**
 * What runSupervised uses of a kafkajs consumer: `run` (counted; the first `failures` restarts
 * reject) and the two events, emitted the way kafkajs does (`{ payload }`).
 */
function fakeConsumer(failures = 0) {
  const events = new EventEmitter();
  const fake = {
    /** Runs after the first one. */
    restarts: 0,
    events: { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' },
    on: (name: string, fn: (e: unknown) => void) => events.on(name, fn),
    runs: 0,
    async run() {
      fake.runs += 1;
      if (fake.runs === 1) return;
      fake.restarts += 1;
      if (failures-- > 0) throw new Error('broker still down');
    },
    crash: (restart: boolean) => events.emit('consumer.crash', { payload: { error: new Error('boom'), groupId: 'g', restart } }),
    join: () => events.emit('consumer.group_join', { payload: {} }),
  };
  return fake;
}

/** Advances the mocked clock by `ms` and lets what the timers started settle. */
const advance = async (t: TestContext, ms: number) => {
  t.mock.timers.tick(ms);
  await new Promise((r) => setImmediate(r));
};

test('a crash kafkajs will not restart runs the consumer again; one it restarts itself is left alone', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const consumer = fakeConsumer();
  const reported: string[] = [];
  await runSupervised(
    consumer as unknown as Consumer,
    {},
    { stopping: () => false, report: (_err, what) => reported.push(what), initialBackoffMs: 5 },
  );
  assert.equal(consumer.runs, 1, 'run once at the start');
  consumer.crash(true);
  await advance(t, 30);
  assert.equal(consumer.restarts, 0, 'kafkajs restarts a retriable crash itself');
  consumer.crash(false);
  await advance(t, 30);
  assert.equal(consumer.restarts, 1);
  assert.match(reported[0], /crashed/);
});

test('nothing is restarted while the owner stops it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const consumer = fakeConsumer();
  let stopping = false;
  await runSupervised(consumer as unknown as Consumer, {}, { stopping: () => stopping, initialBackoffMs: 5 });
  consumer.crash(false);
  stopping = true; // stopped during the backoff
  await advance(t, 30);
  consumer.crash(false);
  await advance(t, 30);
  assert.equal(consumer.restarts, 0);
});

test('a restart that fails is tried again with a longer wait, and a join resets the wait', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const consumer = fakeConsumer(2);
  await runSupervised(consumer as unknown as Consumer, {}, { stopping: () => false, initialBackoffMs: 20, maxBackoffMs: 1000 });
  /** [ms to advance, restarts expected after it, what it shows]. */
  const steps: Array<[number, number, string]> = [
    [19, 0, 'the first wait is 20 ms'],
    [1, 1, 'first restart (fails)'],
    [39, 1, 'the second wait is 40 ms'],
    [1, 2, 'second restart (fails)'],
    [80, 3, 'third restart after 80 ms (works)'],
    [1000, 3, 'nothing more once a restart worked'],
  ];
  consumer.crash(false);
  for (const [ms, expected, what] of steps) {
    await advance(t, ms);
    assert.equal(consumer.restarts, expected, what);
  }
  consumer.join();
  consumer.crash(false);
  await advance(t, 20);
  assert.equal(consumer.restarts, 4, 'after a join the first wait is the initial one again');
});
