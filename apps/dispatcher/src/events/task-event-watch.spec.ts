import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { LoggedEvent } from '../tasks/task-projection.js';
import { TaskEventWatch, type LocalEventLog, type TaskEventReader } from './task-event-watch.js';

const ev = (seq: number): LoggedEvent => ({ seq, event: { n: seq } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await sleep(5);
  assert.ok(ok(), what);
};

function localLog(): LocalEventLog & { log(taskId: string, events: LoggedEvent[]): void } {
  const emitter = new EventEmitter();
  return {
    onLogged(taskId, listener) {
      emitter.on(taskId, listener);
      return () => void emitter.off(taskId, listener);
    },
    log: (taskId, events) => void emitter.emit(taskId, events),
  };
}

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
  const local = localLog();
  const watch = new TaskEventWatch(memoryLog(stored), local, { pollMs: 10_000, hurriedPollMs: 5, hurryMs: 100 });
  const a: number[] = [];
  const b: number[] = [];
  const wa = watch.watch('t', 'acme', 'agent', 0, (es) => a.push(...es.map((e) => e.seq)));
  const wb = watch.watch('t', 'acme', 'agent', 2, (es) => b.push(...es.map((e) => e.seq)));
  await until('both caught up', () => a.length === 3 && b.length === 1);
  // Logged here: handed over at once, and a repeat of what was shown is dropped.
  stored.push(ev(4));
  local.log('t', [ev(3), ev(4)]);
  assert.deepEqual(a, [1, 2, 3, 4]);
  assert.deepEqual(b, [3, 4]);
  assert.equal(watch.polled, 1, 'one poll for the task');
  wa.close();
  wb.close();
  assert.equal(watch.polled, 0);
});

test('a local run that does not follow on (another replica logged the ones between) is read from the log, never skipped', async () => {
  const stored = [1].map(ev);
  const local = localLog();
  const reads: Array<{ tenant: string; after: number }> = [];
  const watch = new TaskEventWatch(memoryLog(stored, reads), local, { pollMs: 10_000, hurriedPollMs: 5, hurryMs: 100 });
  const seen: number[] = [];
  const w = watch.watch('t', 'acme', 'agent', 1, (es) => seen.push(...es.map((e) => e.seq)));
  await until('the first read is done', () => reads.length === 1);
  stored.push(ev(2), ev(3), ev(4));
  local.log('t', [ev(4)]); // 2 and 3 were logged elsewhere
  await until('the gap is read', () => seen.length === 3);
  assert.deepEqual(seen, [2, 3, 4]);
  w.close();
});

test('hurry reads at the short interval; tenants read apart; a failed read is retried', async () => {
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
  const watch = new TaskEventWatch(reader, localLog(), { pollMs: 10_000, hurriedPollMs: 20, hurryMs: 1000 });
  const acme: number[] = [];
  const other: number[] = [];
  const wa = watch.watch('t', 'acme', 'agent', 0, (es) => acme.push(...es.map((e) => e.seq)));
  const wo = watch.watch('t', 'other', 'agent', 0, (es) => other.push(...es.map((e) => e.seq)));
  assert.equal(watch.polled, 2, 'one poll per tenant');
  wa.hurry();
  await until('read after the failure', () => acme.length === 1);
  stored.push(ev(2)); // logged by another replica: only the hurried poll brings it
  await until('the hurried poll reads it', () => acme.length === 2);
  assert.deepEqual(acme, [1, 2]);
  assert.deepEqual(other, [], "another tenant's read finds no task");
  wa.close();
  wo.close();
});

test('a backlog longer than a page is read page after page', async () => {
  const stored = Array.from({ length: 25 }, (_, i) => ev(i + 1));
  const watch = new TaskEventWatch(memoryLog(stored), localLog(), { pollMs: 10_000, hurriedPollMs: 5, hurryMs: 100, pageSize: 10 });
  const seen: number[] = [];
  const w = watch.watch('t', 'acme', 'agent', 0, (es) => seen.push(...es.map((e) => e.seq)));
  await until('all pages', () => seen.length === 25);
  assert.deepEqual(
    seen,
    stored.map((e) => e.seq),
  );
  w.close();
});

test('hurrying stops once two hurried reads find nothing new (the events are logged here, or not at all)', async () => {
  const reads: Array<{ tenant: string; after: number }> = [];
  const watch = new TaskEventWatch(memoryLog([ev(1)], reads), localLog(), { pollMs: 10_000, hurriedPollMs: 5, hurryMs: 10_000 });
  const w = watch.watch('t', 'acme', 'agent', 1, () => undefined);
  await until('the first read', () => reads.length === 1);
  w.hurry();
  await sleep(100);
  assert.equal(reads.length, 3, 'the first read and two hurried ones');
  w.hurry();
  await sleep(50);
  assert.equal(reads.length, 3, 'a later hurry is ignored');
  w.close();
});
