import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { Envelopes, TaskStates, type Identity } from '@mesh/contract';
import { statusChangeEventOf, streamEventOf } from './stream-updates.js';

const identity: Identity = {
  tenant: 'acme',
  agentId: 'a',
  taskId: 't',
  contextId: 'c',
  messageId: 'm',
  executionId: 'acme:t:1',
  subject: 's',
  actor: 's',
};
const completed = { state: TaskState.TASK_STATE_COMPLETED, timestamp: '2026-01-01T00:00:00.000Z', message: undefined };

test('a worker status shows the status as projected, the same update a status the dispatcher sets is', () => {
  // The worker reported COMPLETED; the projection may have stored something else: that is what is shown.
  const reported = Envelopes.status(identity, { seq: 3, state: TaskStates.completed, final: true });
  const shown = streamEventOf(reported, completed);
  assert.deepEqual(shown, {
    statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED', timestamp: completed.timestamp } },
  });
  assert.deepEqual(statusChangeEventOf('t', 'c', completed), shown, 'a cancel or deadline is logged and pushed in the same shape');
});

test('an artifact shows with its chunking flags (absent: a whole artifact)', () => {
  const artifact = { artifactId: 'r', parts: [{ text: 'hi' }] };
  const whole = streamEventOf(Envelopes.artifact(identity, { seq: 1, artifact }), undefined) as { artifactUpdate: Record<string, unknown> };
  assert.equal(whole.artifactUpdate.taskId, 't');
  assert.equal(whole.artifactUpdate.append, undefined, 'false is the default and is not written');
  assert.deepEqual((whole.artifactUpdate.artifact as { artifactId: string }).artifactId, 'r');
  const chunk = streamEventOf(Envelopes.artifact(identity, { seq: 2, artifact, append: true, lastChunk: true }), undefined) as {
    artifactUpdate: Record<string, unknown>;
  };
  assert.equal(chunk.artifactUpdate.append, true);
  assert.equal(chunk.artifactUpdate.lastChunk, true);
});
