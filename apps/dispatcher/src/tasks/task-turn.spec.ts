import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { TaskRow } from './task.repository.js';
import { ended, followUpRefusal, resubmitted, resumed, turnDeadline } from './task-turn.js';

const row = (state: string): TaskRow => ({
  id: 't1',
  tenant: 'acme',
  agent_id: 'a',
  context_id: 'c1',
  state,
  turn: 1,
  version: 3,
  status_timestamp: new Date(0),
  task: { id: 't1', contextId: 'c1', history: [{ messageId: 'm1' }] },
});

test('a follow-up is taken only while the task asks for input, in its own context', () => {
  assert.equal(followUpRefusal(row('TASK_STATE_INPUT_REQUIRED')), undefined);
  assert.equal(followUpRefusal(row('TASK_STATE_AUTH_REQUIRED'), 'c1'), undefined);
  assert.ok(followUpRefusal(row('TASK_STATE_WORKING')) instanceof UnsupportedOperationError);
  assert.ok(followUpRefusal(row('TASK_STATE_SUBMITTED')) instanceof UnsupportedOperationError);
  assert.ok(followUpRefusal(row('TASK_STATE_INPUT_REQUIRED'), 'c2') instanceof RequestMalformedError);
});

test('a terminal task refuses a follow-up as terminal, before any context check', () => {
  const refusal = followUpRefusal(row('TASK_STATE_COMPLETED'), 'c2');
  assert.ok(refusal instanceof UnsupportedOperationError);
  assert.match(refusal.message, /terminal state/);
});

test('a later turn never gets more time than the task was given', () => {
  const budget = new Date(10_000);
  assert.equal(turnDeadline(budget, 20_000), 10_000);
  assert.equal(turnDeadline(budget, 5_000), 5_000);
  assert.equal(turnDeadline(budget, undefined), 10_000);
  assert.equal(turnDeadline(null, 5_000), 5_000);
  assert.equal(turnDeadline(undefined, undefined), undefined);
});

test('a resubmitted task is SUBMITTED at the accept time with the new message last in its history', () => {
  const now = new Date('2026-01-02T03:04:05.678Z');
  const task = resubmitted(row('TASK_STATE_INPUT_REQUIRED').task, { messageId: 'm2' }, now);
  assert.deepEqual(task.status, { state: 'TASK_STATE_SUBMITTED', timestamp: '2026-01-02T03:04:05.678Z' });
  assert.deepEqual(task.history, [{ messageId: 'm1' }, { messageId: 'm2' }]);
  assert.equal(task.id, 't1');
});

test('an ended turn carries its status message in the status and the history; without one the history stays', () => {
  const now = new Date('2026-01-02T03:04:05.678Z');
  const before = row('TASK_STATE_WORKING').task;
  const failed = ended(before, TaskState.TASK_STATE_FAILED, now, { messageId: 'why' });
  assert.deepEqual(failed.status, { state: 'TASK_STATE_FAILED', timestamp: now.toISOString(), message: { messageId: 'why' } });
  assert.deepEqual(failed.history, [{ messageId: 'm1' }, { messageId: 'why' }]);
  const canceled = ended(before, TaskState.TASK_STATE_CANCELED, now);
  assert.deepEqual(canceled.status, { state: 'TASK_STATE_CANCELED', timestamp: now.toISOString() });
  assert.deepEqual(canceled.history, [{ messageId: 'm1' }]);
});

test('a task resumed with its children outcomes stays WORKING (never SUBMITTED again) and keeps its history', () => {
  const task = { id: 't', status: { state: 'TASK_STATE_WORKING', timestamp: '2026-01-01T00:00:00.000Z' }, history: [{ messageId: 'a' }] };
  const next = resumed(task, { messageId: 'b' }, new Date('2026-01-01T00:00:05.000Z'));
  assert.deepEqual(next.status, { state: 'TASK_STATE_WORKING', timestamp: '2026-01-01T00:00:05.000Z' });
  assert.deepEqual(next.history, [{ messageId: 'a' }, { messageId: 'b' }]);
});
