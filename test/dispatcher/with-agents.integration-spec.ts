import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { SendMessageRequest, Task, TaskState } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';

// The dispatcher in front of the real worker runtime (apps/agents, echo-agent): admission sees its
// heartbeats, and a deadline given by the caller reaches the worker as deadline_unix_ms.
const env = await startTestDispatcher('with-agents', {}, { DISPATCHER_REQUIRE_HEALTHY_WORKER: 'true' });
await publishAgents(env.kafka, env.topics, [agentRecord('echo-agent')]);
await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'echo-agent',
});
const client = await a2aClient(env.url, 'echo-agent', 'JSONRPC');

test('with a live worker, new work is admitted and completes', async () => {
  const task = await eventually(
    'admitted once the worker beats',
    async () => (await client.sendMessage(sendRequest(userMessage('hello')))) as Task,
  );
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
});

test('a deadline that has already passed: the worker does not start the task, it fails saying why', async () => {
  const task = (await client.sendMessage(
    sendRequest(userMessage('too late', { metadata: { deadlineUnixMs: Date.now() - 1000 } })),
  )) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_FAILED);
  const text = task.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') ?? '';
  assert.match(text, /deadline/i);
});

test('every part the dispatcher admits reaches the agent: the echo artifact holds them all unchanged', async () => {
  // Data parts may hold any JSON value but null; an empty raw part is zero bytes, still a part; any
  // part may carry a media type, a file name and metadata.
  const parts = [
    { text: 'a' },
    { text: 'b', mediaType: 'text/markdown', metadata: { lang: 'en' } },
    { data: { invoice_id: 'INV-1' }, mediaType: 'application/json', filename: 'invoice.json' },
    { data: 'str' },
    { data: 42 },
    { data: false },
    { data: [1, 'x'] },
    { url: 'https://files.example.com/a.pdf', mediaType: 'application/pdf', filename: 'a.pdf' },
    { raw: 'aGk=', mediaType: 'text/plain' },
    { raw: '' },
  ];
  const request = SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts } });
  const task = (await client.sendMessage(request)) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  const echoed = (Task.toJSON(task) as { artifacts: Array<{ parts: unknown[] }> }).artifacts[0]!.parts;
  assert.deepEqual(echoed, parts);
});
