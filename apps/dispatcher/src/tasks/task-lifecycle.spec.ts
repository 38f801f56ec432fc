import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '@a2a-js/sdk';
import { createLogger } from '@mesh/telemetry';
import { TaskLifecycle } from './task-lifecycle.js';
import type { ExpiredTask, TaskEndings } from './task-endings.js';

/** The two TaskEndings calls the sweeps make, answered from scripted lists (a throw: the database is down). */
function fakeTasks(expiredBatches: Array<ExpiredTask[] | Error>, deletedBatches: number[]) {
  const calls = { expire: 0, delete: 0 };
  const tasks = {
    async failOverdue() {
      calls.expire++;
      const next = expiredBatches.shift() ?? [];
      if (next instanceof Error) throw next;
      return next;
    },
    async deleteSettled() {
      calls.delete++;
      return deletedBatches.shift() ?? 0;
    },
  };
  return { tasks: tasks as unknown as TaskEndings, calls };
}

const expired = (id: string): ExpiredTask => ({
  tenant: 'acme',
  agentId: 'a',
  task: { id } as Task,
  reason: 'DEADLINE_EXCEEDED',
  ended: [],
});

test('a sweep repeats while batches come back full, and tells of every task it failed', async () => {
  const { tasks, calls } = fakeTasks([[expired('1'), expired('2')], [expired('3')]], [2, 2, 1]);
  const told: string[] = [];
  const lifecycle = new TaskLifecycle(
    tasks,
    () => undefined,
    { deadlineGraceMs: 0, retentionMs: 1000, sweepMs: 60_000, batch: 2, sweeps: { held: true } },
    (t) => told.push(t.task.id),
  );
  assert.deepEqual(await lifecycle.sweep(), { expired: 3, deleted: 5 });
  assert.deepEqual(told, ['1', '2', '3']);
  assert.deepEqual(calls, { expire: 2, delete: 3 });
});

test('retention 0 keeps settled tasks: nothing is deleted', async () => {
  const { tasks, calls } = fakeTasks([], [5]);
  const lifecycle = new TaskLifecycle(
    tasks,
    () => undefined,
    { deadlineGraceMs: 0, retentionMs: 0, sweepMs: 60_000, sweeps: { held: true } },
    () => undefined,
  );
  assert.deepEqual(await lifecycle.sweep(), { expired: 0, deleted: 0 });
  assert.equal(calls.delete, 0);
});

test('a failed sweep (database down) is logged and the next one runs; stop() ends the loop', async () => {
  const { tasks, calls } = fakeTasks([new Error('connection refused'), [expired('9')]], []);
  const told: string[] = [];
  const lines: string[] = [];
  const logger = createLogger('dispatcher', 'warn', { write: (line: string) => void lines.push(line) });
  const lifecycle = new TaskLifecycle(
    tasks,
    () => undefined,
    { deadlineGraceMs: 0, retentionMs: 0, sweepMs: 20, sweeps: { held: true }, logger },
    (t) => told.push(t.task.id),
  );
  lifecycle.start();
  for (let i = 0; i < 100 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  await lifecycle.stop();
  assert.deepEqual(told, ['9'], 'the sweep after the failure failed the task');
  assert.ok(
    lines.some((l) => /"level":"warn".*"src":"task-lifecycle".*connection refused.*lifecycle sweep failed; will retry/.test(l)),
    lines.join(''),
  );
  const after = calls.expire;
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(calls.expire, after, 'no sweep after stop()');
});

test('a replica without the sweep lease does not sweep until it holds it', async () => {
  const { tasks, calls } = fakeTasks([[expired('7')]], []);
  const told: string[] = [];
  const sweeps = { held: false };
  const lifecycle = new TaskLifecycle(
    tasks,
    () => undefined,
    { deadlineGraceMs: 0, retentionMs: 0, sweepMs: 10, sweeps },
    (t) => told.push(t.task.id),
  );
  lifecycle.start();
  try {
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(calls.expire, 0, 'no statement while another replica sweeps');
    sweeps.held = true;
    for (let i = 0; i < 100 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(told, ['7']);
  } finally {
    await lifecycle.stop();
  }
});
