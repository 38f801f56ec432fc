import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { TaskState, type Task } from '@a2a-js/sdk';
import { StoredTaskWatch, type LocalCommits } from './stored-task-watch.js';

const task = (id: string, state: TaskState, timestamp = '2026-01-01T00:00:00.000Z'): Task =>
  ({ id, contextId: 'c', status: { state, timestamp, message: undefined }, artifacts: [], history: [], metadata: undefined }) as Task;

function localCommits(): LocalCommits & { commit(task: Task): void } {
  const emitter = new EventEmitter();
  return {
    onCommitted(taskId, listener) {
      emitter.on(taskId, listener);
      return () => void emitter.off(taskId, listener);
    },
    commit: (t) => void emitter.emit(t.id, t),
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('every watcher of a task shares one poll, which stops with the last of them', async () => {
  let reads = 0;
  const watch = new StoredTaskWatch(
    async (id) => {
      reads += 1;
      return task(id, TaskState.TASK_STATE_WORKING);
    },
    localCommits(),
    { pollMs: 20, hurriedPollMs: 5 },
  );
  const seen: number[] = [];
  const watchers = Array.from({ length: 50 }, (_, i) => watch.watch('t1', 'acme', 'a', () => seen.push(i)));
  await sleep(110);
  assert.equal(watch.polled, 1);
  assert.ok(reads >= 2 && reads <= 7, `one read per interval for 50 watchers, got ${reads}`);
  assert.equal(seen.length, 50, 'an unchanged status is handed out once');
  for (const w of watchers) w.close();
  assert.equal(watch.polled, 0);
  const after = reads;
  await sleep(60);
  assert.equal(reads, after, 'no read once the last watcher closed');
});

test('commits made here reach the watchers at once; tenants poll apart; a failed read is retried', async () => {
  const local = localCommits();
  const calls: string[] = [];
  let fail = true;
  const watch = new StoredTaskWatch(
    async (id, tenant) => {
      calls.push(tenant);
      if (fail) {
        fail = false;
        throw new Error('connection reset');
      }
      return tenant === 'acme' ? task(id, TaskState.TASK_STATE_COMPLETED, '2026-01-01T00:00:01.000Z') : undefined;
    },
    local,
    { pollMs: 10_000, hurriedPollMs: 10 },
  );
  const got: Task[] = [];
  const a = watch.watch('t1', 'acme', 'a', (t) => got.push(t));
  const g = watch.watch('t1', 'globex', 'a', () => assert.fail('another tenant never gets the task from a poll'));
  assert.equal(watch.polled, 2);
  g.hurry();
  await sleep(50);
  g.close();
  local.commit(task('t1', TaskState.TASK_STATE_WORKING));
  assert.equal(got.length, 1);
  a.hurry();
  await sleep(80);
  assert.ok(calls.filter((c) => c === 'acme').length >= 2, 'read again after the failure');
  assert.equal(got.at(-1)?.status?.state, TaskState.TASK_STATE_COMPLETED);
  a.close();
  assert.equal(watch.polled, 0);
});

test('a watcher that joins after the others saw a change still gets the stored task at the next read', async () => {
  const watch = new StoredTaskWatch(async (id) => task(id, TaskState.TASK_STATE_COMPLETED), localCommits(), {
    pollMs: 10_000,
    hurriedPollMs: 5,
  });
  const first: Task[] = [];
  const a = watch.watch('t1', 'acme', 'a', (t) => first.push(t));
  a.hurry();
  await sleep(30);
  assert.equal(first.length, 1);
  // A blocking send whose task settled between its accept and its watch: it must not wait for a change.
  const late: Task[] = [];
  const b = watch.watch('t1', 'acme', 'a', (t) => late.push(t));
  await sleep(30);
  assert.equal(late.at(0)?.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(first.length, 1, 'the first watcher is not handed the same status again');
  a.close();
  b.close();
  assert.equal(watch.polled, 0);
});
