import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Consumer } from 'kafkajs';
import { superviseConsumer } from './consumer-supervisor.js';

/** The two events superviseConsumer listens to, emitted the way kafkajs does (`{ payload }`). */
function fakeConsumer() {
  const events = new EventEmitter();
  return {
    events: { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' },
    on: (name: string, fn: (e: unknown) => void) => events.on(name, fn),
    crash: (restart: boolean) => events.emit('consumer.crash', { payload: { error: new Error('boom'), groupId: 'g', restart } }),
    join: () => events.emit('consumer.group_join', { payload: {} }),
  };
}

/** Advances the mocked clock by `ms` and lets what the timers started settle. */
const advance = async (t: TestContext, ms: number) => {
  t.mock.timers.tick(ms);
  await new Promise((r) => setImmediate(r));
};

test('a crash kafkajs will not restart runs the consumer again; one it restarts itself is left alone', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const consumer = fakeConsumer();
  let runs = 0;
  const reported: string[] = [];
  superviseConsumer(consumer as unknown as Consumer, {
    stopping: () => false,
    run: async () => {
      runs += 1;
    },
    report: (_err, what) => reported.push(what),
    initialBackoffMs: 5,
  });
  consumer.crash(true);
  await advance(t, 30);
  assert.equal(runs, 0, 'kafkajs restarts a retriable crash itself');
  consumer.crash(false);
  await advance(t, 30);
  assert.equal(runs, 1);
  assert.match(reported[0], /crashed/);
});

test('nothing is restarted while the owner stops it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const consumer = fakeConsumer();
  let runs = 0;
  let stopping = false;
  superviseConsumer(consumer as unknown as Consumer, {
    stopping: () => stopping,
    run: async () => {
      runs += 1;
    },
    initialBackoffMs: 5,
  });
  consumer.crash(false);
  stopping = true; // stopped during the backoff
  await advance(t, 30);
  consumer.crash(false);
  await advance(t, 30);
  assert.equal(runs, 0);
});

test('a restart that fails is tried again with a longer wait, and a join resets the wait', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const consumer = fakeConsumer();
  let runs = 0;
  let failures = 2;
  superviseConsumer(consumer as unknown as Consumer, {
    stopping: () => false,
    run: async () => {
      runs += 1;
      if (failures-- > 0) throw new Error('broker still down');
    },
    initialBackoffMs: 20,
    maxBackoffMs: 1000,
  });
  /** [ms to advance, runs expected after it, what it shows]. */
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
    assert.equal(runs, expected, what);
  }
  consumer.join();
  consumer.crash(false);
  await advance(t, 20);
  assert.equal(runs, 4, 'after a join the first wait is the initial one again');
});
