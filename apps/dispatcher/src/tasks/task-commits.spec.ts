import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '@a2a-js/sdk';
import type { LoggedEvent } from './task-projection.js';
import { TaskCommits } from './task-commits.js';

function recorder() {
  const woke: string[] = [];
  const handed: Array<{ taskId: string; seqs?: number[]; task?: string }> = [];
  const counted: Array<Record<string, string>> = [];
  const commits = new TaskCommits({
    relay: { kick: () => void woke.push('relay') },
    push: { kick: () => void woke.push('push') },
    changes: {
      committed: (taskId: string, logged?: readonly LoggedEvent[], task?: Task) =>
        void handed.push({ taskId, ...(logged ? { seqs: logged.map((e) => e.seq) } : {}), ...(task ? { task: task.id } : {}) }),
    },
    metrics: { tasks: { inc: (labels: Record<string, string>) => void counted.push(labels) } } as never,
  });
  return { commits, woke, handed, counted };
}

test('a commit wakes only what it stored for later: commands the relay, deliveries the push sender', () => {
  const { commits, woke, handed, counted } = recorder();
  commits.committed({ commands: true });
  assert.deepEqual(woke, ['relay']);
  commits.committed({ deliveries: true });
  assert.deepEqual(woke, ['relay', 'push']);
  commits.committed({});
  assert.deepEqual(woke, ['relay', 'push'], 'nothing stored, nothing woken');
  assert.deepEqual(handed, []);
  assert.deepEqual(counted, []);
});

test("a commit hands each changed task's logged events and committed task to the watchers, and counts its turns", () => {
  const { commits, woke, handed, counted } = recorder();
  commits.committed({
    commands: true,
    deliveries: true,
    changed: [
      { taskId: 'parent', logged: [{ seq: 4, event: {} }], task: { id: 'parent' } as Task },
      { taskId: 'child' }, // logged something the committer does not know: its watchers read it
    ],
    outcomes: [{ tenant: 'acme', agent: 'a', outcome: 'canceled' }],
  });
  assert.deepEqual(woke, ['relay', 'push']);
  assert.deepEqual(handed, [{ taskId: 'parent', seqs: [4], task: 'parent' }, { taskId: 'child' }]);
  assert.deepEqual(counted, [{ tenant: 'acme', agent: 'a', outcome: 'canceled' }]);
});
