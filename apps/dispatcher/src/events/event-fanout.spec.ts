import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Kafka } from '@mesh/bus';
import { createLogger } from '@mesh/telemetry';
import { EventFanout } from './event-fanout.js';
import { TaskChangeNotifier } from '../tasks/task-change-notifier.js';

// The rest/wake logic against a recording stand-in for the kafkajs consumer and admin (the real
// broker path is test/dispatcher/fanout.integration-spec.ts).

type Call = [string, ...unknown[]];

function fakeKafka(fetchOffsets: () => Promise<Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>>) {
  const calls: Call[] = [];
  const events = new EventEmitter();
  const run: { eachMessage?: (p: { topic: string; partition: number; message: unknown }) => Promise<void> } = {};
  const consumer = {
    events: { GROUP_JOIN: 'join', REBALANCING: 'rebalancing' },
    on: (name: string, fn: () => void) => events.on(name, fn),
    connect: async () => undefined,
    disconnect: async () => void calls.push(['disconnect']),
    subscribe: async () => undefined,
    run: async (cfg: typeof run) => {
      run.eachMessage = cfg.eachMessage;
      setImmediate(() => events.emit('join'));
    },
    pause: (t: unknown) => void calls.push(['pause', t]),
    resume: (t: unknown) => void calls.push(['resume', t]),
    seek: (p: unknown) => void calls.push(['seek', p]),
    commitOffsets: async () => undefined,
  };
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    deleteGroups: async () => undefined,
    fetchOffsets: fetchOffsets,
    fetchTopicOffsets: async () => [
      { partition: 0, low: '3', high: '9', offset: '9' },
      { partition: 1, low: '5', high: '7', offset: '7' },
    ],
  };
  return { kafka: { consumer: () => consumer, admin: () => admin } as unknown as Kafka, calls, run };
}

const names = (calls: Call[]) => calls.map((c) => c[0]);
const notifier = () => new TaskChangeNotifier(async () => undefined, { pollMs: 10_000, hurriedPollMs: 10_000, hurryMs: 0 });

test('the fan-out rests from the start; the first follower wakes it at the projector offsets (low watermark where none)', async () => {
  const { kafka, calls } = fakeKafka(async () => [
    {
      topic: 'ev',
      partitions: [
        { partition: 0, offset: '42' },
        { partition: 1, offset: '-1' },
      ],
    },
  ]);
  const buses = notifier();
  const fanout = new EventFanout(kafka, buses, { topic: 'ev', groupName: (id) => `g.${id}`, projectorGroup: 'proj', idleMs: 20 });
  buses.feedFrom(fanout);
  await fanout.start();
  assert.deepEqual(names(calls), ['pause']);

  const off = await buses.follow('t1', () => undefined);
  assert.deepEqual(calls.slice(1), [
    ['seek', { topic: 'ev', partition: 0, offset: '42' }],
    ['seek', { topic: 'ev', partition: 1, offset: '5' }],
    ['resume', [{ topic: 'ev' }]],
  ]);
  // A second follower finds it awake.
  const off2 = await buses.follow('t2', () => undefined);
  assert.equal(calls.length, 4);
  off();
  off2();
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(names(calls).slice(4), ['pause'], 'rests once nobody follows for the idle time');
  await fanout.stop();
});

test('a follower who comes back within the idle time keeps it reading', async () => {
  const { kafka, calls } = fakeKafka(async () => [{ topic: 'ev', partitions: [{ partition: 0, offset: '1' }] }]);
  const buses = notifier();
  const fanout = new EventFanout(kafka, buses, { topic: 'ev', groupName: (id) => `g.${id}`, projectorGroup: 'proj', idleMs: 40 });
  buses.feedFrom(fanout);
  await fanout.start();
  (await buses.follow('t1', () => undefined))();
  const again = await buses.follow('t1', () => undefined);
  await new Promise((r) => setTimeout(r, 80));
  assert.deepEqual(names(calls), ['pause', 'seek', 'resume'], 'no rest while followed');
  again();
  await fanout.stop();
});

test('when the projector offsets cannot be read, the fan-out still wakes (reading on from where it rested) and the follower is not refused', async () => {
  const { kafka, calls } = fakeKafka(async () => {
    throw new Error('KafkaJSConnectionError: Connection error');
  });
  const buses = notifier();
  const written: string[] = [];
  const logger = createLogger('dispatcher', 'warn', { write: (line: string) => void written.push(line) });
  const fanout = new EventFanout(kafka, buses, { topic: 'ev', groupName: (id) => `g.${id}`, projectorGroup: 'proj', idleMs: 20, logger });
  buses.feedFrom(fanout);
  await fanout.start();
  const off = await buses.follow('t1', () => undefined);
  assert.deepEqual(names(calls), ['pause', 'resume']);
  assert.match(written.join(''), /cannot read the projector offsets/);
  off();
  await fanout.stop();
});

test("an event of a followed task signals its followers by the record's key, never decoded; other tasks' events are skipped", async () => {
  const { kafka, run } = fakeKafka(async () => [{ topic: 'ev', partitions: [{ partition: 0, offset: '1' }] }]);
  const buses = notifier();
  const fanout = new EventFanout(kafka, buses, { topic: 'ev', groupName: (id) => `g.${id}`, projectorGroup: 'proj', idleMs: 20 });
  buses.feedFrom(fanout);
  await fanout.start();
  const signalled: string[] = [];
  const off = await buses.follow('t1', () => signalled.push('t1'));
  // Not an envelope at all: a signal needs the key only.
  const record = (key: string | null, offset: string) => ({
    key: key === null ? null : Buffer.from(key),
    value: Buffer.from('?'),
    headers: {},
    offset,
  });
  await run.eachMessage!({ topic: 'ev', partition: 0, message: record('t1', '1') });
  await run.eachMessage!({ topic: 'ev', partition: 0, message: record('t2', '2') });
  await run.eachMessage!({ topic: 'ev', partition: 0, message: record(null, '3') }); // keyless and undecodable: skipped
  assert.deepEqual(signalled, ['t1']);
  off();
  await fanout.stop();
});
