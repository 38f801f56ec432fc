import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Outcomes, type AgentContext, type AgentTask, type ArtifactInput } from '@mesh/agent-sdk';
import { holdOf, tckAgent } from './tck-agent.js';

function turn(messageId: string, signal = new AbortController().signal): AgentTask {
  const message = { role: 'user' as const, messageId, parts: [{ type: 'text' as const, text: 'hello' }] };
  return {
    agentId: 'tck-agent',
    tenant: 'acme',
    taskId: 't',
    contextId: 'c',
    turn: 0,
    subject: 'alice',
    actor: 'alice',
    message,
    parts: message.parts,
    history: [],
    signal,
  };
}

function context() {
  const seen: { progress: string[]; artifacts: ArtifactInput[] } = { progress: [], artifacts: [] };
  const ctx = {
    callTool: () => Promise.reject(new Error('no tools')),
    progress: async (text: string) => void seen.progress.push(text),
    artifact: async (a: ArtifactInput) => void seen.artifacts.push(a),
    askForInput: (q: string) => Outcomes.inputRequired(q),
    complete: (t?: string) => Outcomes.completed(t),
    delegate: () => {
      throw new Error('tck-agent does not delegate');
    },
    fail: (r: string) => Outcomes.failed(r),
    reject: (r: string) => Outcomes.rejected(r),
  } as AgentContext;
  return { ctx, seen };
}

test('tck-agent: each turn reports WORKING, echoes the message and keeps the task open (INPUT_REQUIRED)', async () => {
  const { ctx, seen } = context();
  const outcome = await tckAgent.handler(turn('text-message-id-1'), ctx);
  assert.equal(outcome.state, 'input-required');
  assert.deepEqual(seen.progress, ['Working on it.']);
  assert.deepEqual(seen.artifacts[0]?.parts, [{ type: 'text', text: 'You said: hello' }]);
});

test('tck-agent: the TCK message-id patterns stay WORKING; a cancel ends the wait at once', async () => {
  assert.equal(holdOf('text-message-id-1'), 0);
  assert.ok(holdOf('test-resubscribe-message-id-1') >= 4000, '≥ 2 × TCK_STREAMING_TIMEOUT (2 s)');
  assert.ok(holdOf('test-subscribe-message-id-1') > 0);
  assert.ok(holdOf('list-test-message-id-1') > 0);
  const stop = new AbortController();
  const { ctx, seen } = context();
  const started = Date.now();
  const running = tckAgent.handler(turn('test-subscribe-message-id-1', stop.signal), ctx);
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(seen.artifacts, [], 'still working');
  stop.abort();
  const outcome = await running;
  assert.ok(Date.now() - started < 2000);
  assert.equal(outcome.state, 'failed');
});
