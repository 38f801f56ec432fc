import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { isInterrupted, isSettled, isTerminal, parseState, stateName, stateRank } from './task-state.js';

test('only the wire spelling of a state parses; other spellings and unknown states do not', () => {
  assert.equal(parseState('TASK_STATE_WORKING'), TaskState.TASK_STATE_WORKING);
  assert.equal(parseState('TASK_STATE_INPUT_REQUIRED'), TaskState.TASK_STATE_INPUT_REQUIRED);
  for (const raw of ['', 'done', 'working', 'WORKING', 'input-required', 'auth_required', 'TASK_STATE_UNSPECIFIED', '2'])
    assert.equal(parseState(raw), undefined);
  assert.equal(stateName(TaskState.TASK_STATE_COMPLETED), 'TASK_STATE_COMPLETED');
  assert.throws(() => stateName(TaskState.TASK_STATE_UNSPECIFIED), /no task has the state TASK_STATE_UNSPECIFIED/);
});

test('ranks only move forward within a turn; settled = terminal or interrupted', () => {
  assert.ok(stateRank(TaskState.TASK_STATE_SUBMITTED) < stateRank(TaskState.TASK_STATE_WORKING));
  assert.ok(stateRank(TaskState.TASK_STATE_WORKING) < stateRank(TaskState.TASK_STATE_COMPLETED));
  assert.equal(stateRank(TaskState.TASK_STATE_INPUT_REQUIRED), stateRank(TaskState.TASK_STATE_FAILED));
  for (const s of [
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
  ]) {
    assert.ok(isTerminal(s) && isSettled(s) && !isInterrupted(s));
  }
  for (const s of [TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED])
    assert.ok(isInterrupted(s) && isSettled(s) && !isTerminal(s));
  for (const s of [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]) assert.ok(!isSettled(s));
});
