import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Task, TaskState } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { TaskChangeListener } from '../tasks/task-change-notifier.js';
import type { LoggedEvent } from '../tasks/task-projection.js';
import { TaskEventFollower, type FollowedEvent, type TaskEventLog, type TaskEventStream } from './task-event-follower.js';

const REF = { taskId: 't1', tenant: 'acme', agentId: 'echo' };

const status = (seq: number, state: string): LoggedEvent => ({
  seq,
  event: { statusUpdate: { taskId: 't1', contextId: 'c1', status: { state } } },
});
const artifact = (seq: number): LoggedEvent => ({
  seq,
  event: { artifactUpdate: { taskId: 't1', contextId: 'c1', artifact: { artifactId: `a${seq}`, parts: [{ text: 'x' }] } } },
});

/** A task's log in memory: its state and events; `oldest` is the first still kept. */
function memoryLog(task: { state: string; events: LoggedEvent[]; oldest?: number; history?: number }) {
  const reads: string[] = [];
  const log: TaskEventLog = {
    async loadWithProgress(taskId, tenant) {
      reads.push('snapshot');
      if (taskId !== REF.taskId || tenant !== REF.tenant) return undefined;
      const stored = Task.fromJSON({
        id: 't1',
        contextId: 'c1',
        status: { state: task.state },
        history: Array.from({ length: task.history ?? 0 }, (_, i) => ({ messageId: `m${i}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] })),
      });
      return { task: stored, eventSeq: task.events.at(-1)?.seq ?? 0 };
    },
    async readEvents(taskId, tenant, _agentId, after, limit) {
      reads.push(`events after ${after}`);
      if (taskId !== REF.taskId || tenant !== REF.tenant) return undefined;
      const kept = task.events.filter((e) => e.seq >= (task.oldest ?? 1));
      return {
        state: task.state,
        lastSeq: task.events.at(-1)?.seq ?? 0,
        ...(kept[0] ? { oldestSeq: kept[0].seq } : {}),
        events: kept.filter((e) => e.seq > after).slice(0, limit),
      };
    },
  };
  return { log, reads };
}

/** A TaskChangeNotifier that hands each watcher the log's events after its position, then what `emit` adds. */
function fakeChanges(logged: LoggedEvent[]) {
  const open = new Set<TaskChangeListener>();
  const changes = {
    watched: 0,
    watch(_taskId: string, _tenant: string, _agentId: string, after: number, listener: TaskChangeListener) {
      changes.watched++;
      open.add(listener);
      const backlog = logged.filter((e) => e.seq > after);
      if (backlog.length) queueMicrotask(() => listener(backlog));
      return { close: () => open.delete(listener) };
    },
    emit(...events: LoggedEvent[]) {
      logged.push(...events);
      for (const l of open) l(events);
    },
    get open() {
      return open.size;
    },
  };
  return changes;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function collect(stream: TaskEventStream, onEach?: (e: FollowedEvent) => void): Promise<Array<[number, string]>> {
  const seen: Array<[number, string]> = [];
  for await (const e of stream) {
    const p = e.response.payload;
    seen.push([e.seq, p?.$case === 'statusUpdate' ? TaskState[p.value.status!.state] : (p?.$case ?? 'none')]);
    onEach?.(e);
  }
  return seen;
}

test('a new stream opens with the task as stored (as shown), then follows its events up to a settled status', async () => {
  const events = [status(1, 'TASK_STATE_SUBMITTED'), status(2, 'TASK_STATE_WORKING')];
  const { log } = memoryLog({ state: 'TASK_STATE_WORKING', events, history: 3 });
  const changes = fakeChanges([...events]);
  const follower = new TaskEventFollower(log, changes, { maxMs: 5_000 });
  const stream = await follower.open(REF, { shown: (task) => ({ ...task, history: task.history.slice(-1) }) });
  assert.equal(stream.waitsFirst, false, 'the snapshot is at hand');
  const seen = await collect(stream, (e) => {
    if (e.response.payload?.$case === 'task') {
      assert.equal(e.response.payload.value.history.length, 1, 'the snapshot as shown');
      changes.emit(artifact(3), status(4, 'TASK_STATE_COMPLETED'), status(5, 'TASK_STATE_WORKING'));
    }
  });
  assert.deepEqual(seen, [
    [2, 'task'],
    [3, 'artifactUpdate'],
    [4, 'TASK_STATE_COMPLETED'],
  ]);
  assert.equal(changes.open, 0, 'the watch is released');
});

test('a settled task streams its snapshot alone, without a watch', async () => {
  const events = [status(1, 'TASK_STATE_SUBMITTED'), status(2, 'TASK_STATE_INPUT_REQUIRED')];
  const changes = fakeChanges(events);
  const follower = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_INPUT_REQUIRED', events }).log, changes, { maxMs: 5_000 });
  assert.deepEqual(await collect(await follower.open(REF)), [[2, 'task']]);
  assert.equal(changes.watched, 0);
});

test('an unknown task is TaskNotFound before anything is streamed, new or resumed', async () => {
  const follower = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_WORKING', events: [] }).log, fakeChanges([]), { maxMs: 5_000 });
  const other = { ...REF, tenant: 'globex' };
  await assert.rejects(follower.open(other), TaskNotFoundError);
  await assert.rejects(follower.open(other, { resumeAfter: 0 }), TaskNotFoundError);
});

test('a Last-Event-ID ahead of the log or older than its oldest kept event is refused, naming which', async () => {
  const events = [1, 2, 3, 4, 5].map((n) => status(n, 'TASK_STATE_WORKING'));
  const follower = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_WORKING', events, oldest: 3 }).log, fakeChanges(events), {
    maxMs: 5_000,
  });
  const refusal = (eventId: string, extra: Record<string, string>) => (err: unknown) => {
    assert.ok(err instanceof RequestMalformedError);
    assert.deepEqual((err as RequestMalformedError & { metadata?: Record<string, string> }).metadata, { eventId, ...extra });
    return true;
  };
  await assert.rejects(follower.open(REF, { resumeAfter: 6 }), refusal('UNKNOWN', { lastEventId: '5' }));
  await assert.rejects(follower.open(REF, { resumeAfter: 1 }), refusal('EXPIRED', { oldestEventId: '3' }));
  // Right before the oldest kept one: nothing is lost, and the stream waits for what comes next.
  assert.equal((await follower.open(REF, { resumeAfter: 2 })).waitsFirst, true);
});

test('resuming a settled task with nothing missed ends at once; with events missed it replays them, past a settled status that is history', async () => {
  // Asked for input (2), answered (3), completed (4).
  const events = [
    status(1, 'TASK_STATE_WORKING'),
    status(2, 'TASK_STATE_INPUT_REQUIRED'),
    status(3, 'TASK_STATE_SUBMITTED'),
    status(4, 'TASK_STATE_COMPLETED'),
  ];
  const changes = fakeChanges(events);
  const follower = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_COMPLETED', events }).log, changes, { maxMs: 5_000 });
  const done = await follower.open(REF, { resumeAfter: 4 });
  assert.equal(done.waitsFirst, false);
  assert.deepEqual(await collect(done), []);
  assert.equal(changes.watched, 0);
  const replay = await follower.open(REF, { resumeAfter: 1 });
  assert.equal(replay.waitsFirst, true, 'no snapshot comes first');
  assert.deepEqual(await collect(replay), [
    [2, 'TASK_STATE_INPUT_REQUIRED'],
    [3, 'TASK_STATE_SUBMITTED'],
    [4, 'TASK_STATE_COMPLETED'],
  ]);
  assert.equal(changes.open, 0);
});

test('a resumed terminal task ends at its last event, settled status or not', async () => {
  const events = [status(1, 'TASK_STATE_WORKING'), status(2, 'TASK_STATE_CANCELED'), artifact(3)];
  const follower = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_CANCELED', events }).log, fakeChanges(events), { maxMs: 5_000 });
  assert.deepEqual(await collect(await follower.open(REF, { resumeAfter: 2 })), [[3, 'artifactUpdate']]);
});

test('a stream ends when the caller leaves or at its longest, releasing its watch', async () => {
  const events = [status(1, 'TASK_STATE_WORKING')];
  const changes = fakeChanges(events);
  const follower = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_WORKING', events }).log, changes, { maxMs: 60_000 });
  const caller = new AbortController();
  const stream = await follower.open(REF, { resumeAfter: 1, closed: caller.signal });
  const seen = collect(stream);
  await sleep(10);
  assert.equal(changes.open, 1, 'waiting on the task');
  caller.abort();
  assert.deepEqual(await seen, []);
  assert.equal(changes.open, 0);

  const short = new TaskEventFollower(memoryLog({ state: 'TASK_STATE_WORKING', events }).log, changes, { maxMs: 30 });
  const started = Date.now();
  assert.deepEqual(await collect(await short.open(REF, { resumeAfter: 1 })), []);
  assert.ok(Date.now() - started >= 25, 'open until its longest');
  assert.equal(changes.open, 0);
});

test('a caller already gone costs no read', async () => {
  const { log, reads } = memoryLog({ state: 'TASK_STATE_WORKING', events: [] });
  const follower = new TaskEventFollower(log, fakeChanges([]), { maxMs: 5_000 });
  const stream = await follower.open(REF, { closed: AbortSignal.abort() });
  assert.deepEqual(await collect(stream), []);
  assert.deepEqual(reads, []);
});
