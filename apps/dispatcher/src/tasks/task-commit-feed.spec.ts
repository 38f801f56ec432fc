import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '@mesh/telemetry';
import { TaskCommitFeed, TaskCommitSignal, TaskCommitTeller } from './task-commit-feed.js';

const tick = () => new Promise((r) => setImmediate(r));

test('commits of one burst are told in one notification per 50 ids; ids too long for a payload are left to the polls', async () => {
  const signal = new TaskCommitSignal();
  const sent: unknown[][] = [];
  const teller = new TaskCommitTeller({ query: async (_sql, params) => void sent.push(params) }, signal);
  const ids = Array.from({ length: 70 }, (_, i) => `t${i}`);
  teller.tell(ids.slice(0, 40));
  teller.tell([...ids.slice(40), 't0', 'x'.repeat(129)]);
  await tick();
  await tick();
  assert.equal(sent.length, 2);
  const told = sent.map(([channel, payload]) => {
    assert.equal(channel, signal.channel);
    const [sender, list] = String(payload).split(' ');
    assert.equal(sender, signal.sender);
    return list.split(',');
  });
  assert.deepEqual(
    told.map((l) => l.length),
    [50, 20],
  );
  assert.deepEqual(told.flat(), ids, 'each id once, none too long');
});

test('a notification that fails is logged, never thrown: the other replicas read on their polls', async () => {
  const lines: string[] = [];
  const logger = createLogger('dispatcher', 'warn', { write: (line: string) => void lines.push(line) });
  const teller = new TaskCommitTeller(
    {
      query: async () => {
        throw new Error('connection refused');
      },
    },
    new TaskCommitSignal(),
    logger,
  );
  teller.tell(['t1']);
  await tick();
  await tick();
  assert.equal(lines.length, 1);
  assert.match(lines[0], /cannot tell the other replicas/);
  assert.match(lines[0], /connection refused/);
});

test('a feed that cannot connect starts anyway (not listening) and stops retrying when stopped', async () => {
  let readAll = 0;
  const feed = new TaskCommitFeed(
    new TaskCommitSignal(),
    { storedElsewhere: () => undefined, readAll: () => void (readAll += 1) },
    { url: 'postgres://nobody@127.0.0.1:1/none', retryMs: 20, logger: createLogger('dispatcher', 'error', { write: () => undefined }) },
  );
  await feed.start();
  assert.equal(feed.listening, false);
  await feed.stop();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(feed.listening, false);
  assert.equal(readAll, 0, 'never listened, so nothing to read again');
});
