import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { statusChangeEventOf } from './stream-updates.js';
import type { LoggedEvent } from './task-projection.js';
import { TaskChangeNotifier, type TaskEventReader } from './task-change-notifier.js';

const ev = (seq: number): LoggedEvent => ({ seq, event: { n: seq } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await sleep(5);
  assert.ok(ok(), what);
};

/** A task log in memory: `stored` events (1..n), read within tenant `acme` only. */
function memoryLog(stored: LoggedEvent[], reads: Array<{ tenant: string; after: number }> = []): TaskEventReader {
  return async (_taskId, tenant, _agentId, after, limit) => {
    reads.push({ tenant, after });
    if (tenant !== 'acme') return undefined;
    const events = stored.filter((e) => e.seq > after).slice(0, limit);
    return { state: 'TASK_STATE_WORKING', lastSeq: stored.length, oldestSeq: stored[0]?.seq, events };
  };
}

test('each watcher gets the events after its own position, in order, each once', async () => {
  const stored = [1, 2, 3].map(ev);
  const watch = new TaskChangeNotifier(memoryLog(stored), { pollMs: 10_000, eagerPollMs: 5 });
  const a: number[] = [];
  const b: number[] = [];
  const wa = watch.watch('t', 'acme', 'agent', 0, (es) => a.push(...es.map((e) => e.seq)));
  const wb = watch.watch('t', 'acme', 'agent', 2, (es) => b.push(...es.map((e) => e.seq)));
  await until('both caught up', () => a.length === 3 && b.length === 1);
  // Logged here: handed over at once, and a repeat of what was shown is dropped.
  stored.push(ev(4));
  watch.committed('t', [ev(3), ev(4)]);
  assert.deepEqual(a, [1, 2, 3, 4]);
  assert.deepEqual(b, [3, 4]);
  assert.equal(watch.polled, 1, 'one poll for the task');
  wa.close();
  wb.close();
  assert.equal(watch.polled, 0);
});

test('a local run that does not follow on (another replica logged the ones between) is read from the log, never skipped', async () => {
  const stored = [1].map(ev);
  const reads: Array<{ tenant: string; after: number }> = [];
  const watch = new TaskChangeNotifier(memoryLog(stored, reads), { pollMs: 10_000, eagerPollMs: 5 });
  const seen: number[] = [];
  const w = watch.watch('t', 'acme', 'agent', 1, (es) => seen.push(...es.map((e) => e.seq)));
  await until('the first read is done', () => reads.length === 1);
  stored.push(ev(2), ev(3), ev(4));
  watch.committed('t', [ev(4)]); // 2 and 3 were logged elsewhere
  await until('the gap is read', () => seen.length === 3);
  assert.deepEqual(seen, [2, 3, 4]);
  w.close();
});

test('a change stored elsewhere is read at once, in every tenant polling the task; a failed read is retried', async () => {
  const stored = [1].map(ev);
  let fail = true;
  const reads: Array<{ tenant: string; after: number }> = [];
  const inner = memoryLog(stored, reads);
  const reader: TaskEventReader = async (...args) => {
    if (fail) {
      fail = false;
      reads.push({ tenant: 'failed', after: -1 });
      throw new Error('connection reset');
    }
    return inner(...args);
  };
  const watch = new TaskChangeNotifier(reader, { pollMs: 60_000, eagerPollMs: 60_000 });
  const acme: number[] = [];
  const other: number[] = [];
  const wa = watch.watch('t', 'acme', 'agent', 0, (es) => acme.push(...es.map((e) => e.seq)), { caughtUp: true });
  const wo = watch.watch('t', 'other', 'agent', 0, (es) => other.push(...es.map((e) => e.seq)), { caughtUp: true });
  const wu = watch.watch('u', 'acme', 'agent', 0, () => undefined, { caughtUp: true });
  assert.equal(watch.polled, 3, 'one poll per task and tenant');
  watch.storedElsewhere('t');
  // The first read fails; the retry waits for the poll, which the next change stored elsewhere brings forward.
  await until('the failed read', () => reads.length === 2);
  watch.storedElsewhere('t');
  await until('read after the failure', () => acme.length === 1);
  stored.push(ev(2)); // logged by another replica, which says so
  watch.storedElsewhere('t');
  await until('read at once', () => acme.length === 2);
  assert.deepEqual(acme, [1, 2]);
  assert.deepEqual(other, [], "another tenant's read finds no task");
  const before = reads.length;
  watch.storedElsewhere('x'); // nobody here watches it
  await sleep(20);
  assert.equal(reads.length, before, 'a task not watched here reads nothing');
  watch.readAll(); // the feed listens again: every poll reads
  await until('every poll reads', () => reads.length === before + 3);
  wa.close();
  wo.close();
  wu.close();
});

test('a backlog longer than a page is read page after page', async () => {
  const stored = Array.from({ length: 25 }, (_, i) => ev(i + 1));
  const watch = new TaskChangeNotifier(memoryLog(stored), { pollMs: 10_000, eagerPollMs: 5, pageSize: 10 });
  const seen: number[] = [];
  const w = watch.watch('t', 'acme', 'agent', 0, (es) => seen.push(...es.map((e) => e.seq)));
  await until('all pages', () => seen.length === 25);
  assert.deepEqual(
    seen,
    stored.map((e) => e.seq),
  );
  w.close();
});

test('a local commit hands the task as committed to the watchers handed the end of its run; one with no events read now', async () => {
  const stored = [1, 2].map(ev);
  const reads: Array<{ tenant: string; after: number }> = [];
  const watch = new TaskChangeNotifier(memoryLog(stored, reads), { pollMs: 10_000, eagerPollMs: 5 });
  const got: Array<{ seqs: number[]; task?: string }> = [];
  const w = watch.watch('t', 'acme', 'agent', 2, (es, task) => got.push({ seqs: es.map((e) => e.seq), task: task?.id }));
  await until('the first read', () => reads.length === 1);
  stored.push(ev(3));
  watch.committed('t', [ev(3)], { id: 't' } as Task);
  assert.deepEqual(got, [{ seqs: [3], task: 't' }]);
  // A change committed here whose events the committer does not know (a resumed turn): read now, not at the poll.
  stored.push(ev(4));
  watch.committed('t');
  await until('read at once', () => got.length === 2);
  assert.deepEqual(got[1], { seqs: [4], task: undefined }, 'a read hands events without a committed task');
  watch.committed('other-task', [ev(1)], { id: 'other-task' } as Task); // nobody watches it: nothing happens
  assert.equal(got.length, 2);
  w.close();
});

test('an eager watcher (a blocking send) reads at the eager interval for as long as it is open', async () => {
  const stored = [1].map(ev);
  const reads: Array<{ tenant: string; after: number }> = [];
  const watch = new TaskChangeNotifier(memoryLog(stored, reads), { pollMs: 10_000, eagerPollMs: 10 });
  const seen: number[] = [];
  const w = watch.watch('t', 'acme', 'agent', 1, (es) => seen.push(...es.map((e) => e.seq)), { eager: true });
  await sleep(120);
  assert.ok(reads.length >= 5, `nothing new for a while, still read often (${reads.length} reads)`);
  stored.push(ev(2)); // logged by another replica
  await until('the eager poll reads it', () => seen.length === 1);
  w.close();
  const after = reads.length;
  await sleep(60);
  assert.equal(reads.length, after, 'the poll stops with its last watcher');
  assert.equal(watch.polled, 0);
});

test('a caught-up watcher (a blocking wait) reads nothing at once: a local run that follows on needs no read, one that does not reads', async () => {
  const stored = [1].map(ev);
  const reads: Array<{ tenant: string; after: number }> = [];
  const watch = new TaskChangeNotifier(memoryLog(stored, reads), { pollMs: 10_000, eagerPollMs: 10_000 });
  const seen: number[] = [];
  const w = watch.watch('t', 'acme', 'agent', 1, (es) => seen.push(...es.map((e) => e.seq)), { eager: true, caughtUp: true });
  await sleep(50);
  assert.equal(reads.length, 0, 'no catch-up read');
  stored.push(ev(2));
  watch.committed('t', [ev(2)]);
  assert.deepEqual(seen, [2], 'handed over as committed');
  assert.equal(reads.length, 0);
  // 3 was logged elsewhere; 4 committed here does not follow on from 2: the log is read.
  stored.push(ev(3), ev(4));
  watch.committed('t', [ev(4)]);
  await until('the gap is read', () => seen.length === 3);
  assert.deepEqual(seen, [2, 3, 4]);
  assert.equal(reads.length, 1);
  w.close();
});

const status = (seq: number, state: TaskState): LoggedEvent => ({
  seq,
  event: statusChangeEventOf('t', 'c', { state, timestamp: undefined, message: undefined }),
});
const taskIn = (state: TaskState) => ({ id: 't', contextId: 'c', status: { state, timestamp: undefined, message: undefined } }) as Task;

test('a blocking send follows the log after its accept: a settled status logged elsewhere answers with the task read once', async () => {
  // Turn 1 asked for input (2); the accept of turn 2 left the log at 3: that settled status is history.
  const stored = [
    status(1, TaskState.TASK_STATE_WORKING),
    status(2, TaskState.TASK_STATE_INPUT_REQUIRED),
    status(3, TaskState.TASK_STATE_SUBMITTED),
  ];
  const reads: Array<{ tenant: string; after: number }> = [];
  const changes = new TaskChangeNotifier(memoryLog(stored, reads), { pollMs: 10_000, eagerPollMs: 10 });
  let loads = 0;
  const waiting = changes.waitSettled(taskIn(TaskState.TASK_STATE_SUBMITTED), 'acme', 'agent', 3, {
    deadline: Date.now() + 5000,
    load: async () => (loads++, taskIn(TaskState.TASK_STATE_COMPLETED)),
  });
  await until('a few eager reads', () => reads.length >= 3);
  assert.equal(loads, 0, 'nothing settled after its accept yet');
  stored.push(status(4, TaskState.TASK_STATE_WORKING), status(5, TaskState.TASK_STATE_COMPLETED)); // another replica's projector
  const answer = await waiting;
  assert.equal(answer.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(loads, 1);
  assert.ok(
    reads.every((r) => r.after >= 3),
    'never reads what came before its accept',
  );
  assert.equal(changes.polled, 0, 'its poll stopped with it');
});

test('a blocking send answers with the task as a commit here left it, without reading it', async () => {
  const stored: LoggedEvent[] = [];
  const changes = new TaskChangeNotifier(memoryLog(stored), { pollMs: 10_000, eagerPollMs: 10 });
  const committed = { ...taskIn(TaskState.TASK_STATE_CANCELED), metadata: { committed: true } } as Task;
  const waiting = changes.waitSettled(taskIn(TaskState.TASK_STATE_SUBMITTED), 'acme', 'agent', 0, {
    deadline: Date.now() + 5000,
    load: async () => assert.fail('a change committed here is not read back'),
  });
  changes.committed('t', [status(1, TaskState.TASK_STATE_WORKING)], taskIn(TaskState.TASK_STATE_WORKING));
  stored.push(status(1, TaskState.TASK_STATE_WORKING), status(2, TaskState.TASK_STATE_CANCELED));
  changes.committed('t', [status(2, TaskState.TASK_STATE_CANCELED)], committed);
  assert.equal(await waiting, committed);
});

test('a blocking send gives up at its deadline, at once when its caller leaves, and answers a failed read with the task as accepted', async () => {
  const changes = new TaskChangeNotifier(memoryLog([]), { pollMs: 10_000, eagerPollMs: 10 });
  const accepted = taskIn(TaskState.TASK_STATE_SUBMITTED);
  const started = Date.now();
  assert.equal(await changes.waitSettled(accepted, 'acme', 'agent', 0, { deadline: started + 50, load: async () => undefined }), accepted);
  assert.ok(Date.now() - started >= 45, 'waited until its deadline');
  const left = new AbortController();
  const waiting = changes.waitSettled(accepted, 'acme', 'agent', 0, {
    deadline: Date.now() + 10_000,
    closed: left.signal,
    load: async () => undefined,
  });
  left.abort();
  assert.equal(await waiting, accepted);
  assert.equal(changes.polled, 0);

  const failing = new TaskChangeNotifier(memoryLog([status(1, TaskState.TASK_STATE_FAILED)]), {
    pollMs: 10_000,
    eagerPollMs: 10,
  });
  const answer = await failing.waitSettled(accepted, 'acme', 'agent', 0, {
    deadline: Date.now() + 5000,
    load: async () => {
      throw new Error('connection reset');
    },
  });
  assert.equal(answer, accepted, 'a handle, never an error');
  // A task that is settled already is answered at once.
  const done = taskIn(TaskState.TASK_STATE_COMPLETED);
  assert.equal(await failing.waitSettled(done, 'acme', 'agent', 0, { deadline: Date.now() + 5000, load: async () => undefined }), done);
  assert.equal(failing.polled, 0);
});
