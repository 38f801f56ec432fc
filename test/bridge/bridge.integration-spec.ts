import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { loadAgentsConfig, remoteAgent, startAgents } from '@mesh/agent-runtime';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { collect, describe, streamingClient } from '../support/streaming.js';
import { standInForTopicOwners } from '../support/topic-owners.js';
import { startRemoteAgent } from '../support/remote-agents/remote-process.js';

// Remote A2A agents (separate processes, official SDK server) served through the mesh by a bridge
// worker: the caller talks to the dispatcher only, with the official client.
const env = await startTestDispatcher('bridge');
const streamingRemote = await startRemoteAgent({ REMOTE_STREAMING: 'true' });
const polledRemote = await startRemoteAgent({ REMOTE_STREAMING: 'false' });
// Answers its first two A2A requests 429 Retry-After: 1.
const busyRemote = await startRemoteAgent({ REMOTE_STREAMING: 'true', REMOTE_BUSY_REQUESTS: '2' });
await publishAgents(env.kafka, env.topics, [
  agentRecord('remote-stream'),
  agentRecord('remote-poll'),
  agentRecord('remote-busy'),
  // acme's own, served by the same bridge.
  agentRecord('remote-private', { visibility: 'private' }),
]);
await standInForTopicOwners(env.prefix);
const bridge = await startAgents(
  {
    ...loadAgentsConfig({ KAFKA_BROKERS: env.env.KAFKA_BROKERS, TOPIC_PREFIX: env.prefix, DATABASE_URL: env.databaseUrl }),
    AGENTS_PORT: 0,
  },
  [
    await remoteAgent({ id: 'remote-stream', cardUrl: streamingRemote.cardUrl, allowLoopback: true, visibility: 'public' }),
    await remoteAgent({ id: 'remote-poll', cardUrl: polledRemote.cardUrl, allowLoopback: true, visibility: 'public', pollIntervalMs: 50 }),
    await remoteAgent({ id: 'remote-busy', cardUrl: busyRemote.cardUrl, allowLoopback: true, visibility: 'public' }),
    await remoteAgent({ id: 'remote-private', cardUrl: streamingRemote.cardUrl, allowLoopback: true, visibility: 'private' }),
  ],
);
after(() => bridge.stop());

const textOf = (t: Task) => t.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') ?? '';

async function until(client: Awaited<ReturnType<typeof streamingClient>>, id: string, states: TaskState[]): Promise<Task> {
  return eventually(`task ${id} in ${states.join('/')}`, async () => {
    const t = await client.getTask({ tenant: '', id });
    return states.includes(t.status!.state) ? t : undefined;
  });
}

test('streaming remote: the caller streams the remote task events in order and it completes', async () => {
  const client = await streamingClient(env.url, 'remote-stream', 'JSONRPC');
  const s = collect(client.sendMessageStream(sendRequest(userMessage('hello remote'))));
  await s.done;
  const seen = describe(s.events);
  assert.equal(seen[0], 'task:SUBMITTED');
  assert.deepEqual(seen.slice(-2), ['artifact:echo: hello remote', 'status:COMPLETED']);
  // The remote's progress message came through as a WORKING status before the artifact.
  const progress = s.events.findIndex(
    (e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status?.message?.parts.some((p) => p.content?.value === 'step 1'),
  );
  const art = seen.indexOf('artifact:echo: hello remote');
  assert.ok(progress > 0 && progress < art, `progress before the artifact: ${seen.join(', ')}`);
  const stats = await streamingRemote.stats();
  const sent = stats.messages.find((m) => m.text === 'hello remote')!;
  // One remote task; the message id derives from the execution id; who it is for travels as metadata.
  assert.match(sent.messageId, /^mesh-acme:/);
  assert.equal(sent.metadata?.['mesh/tenant'], 'acme');
  assert.equal(sent.metadata?.['mesh/subject'], 'alice');
  // The caller's bearer token never reaches the remote.
  assert.ok(stats.authorization.every((a) => !a.includes('demo-acme')));
});

test('non-streaming remote (card without streaming): GetTask polling relays it to completion', async () => {
  const client = await streamingClient(env.url, 'remote-poll', 'HTTP+JSON');
  const started = (await client.sendMessage(sendRequest(userMessage('polled please'), { returnImmediately: true }))) as Task;
  const done = await until(client, started.id, [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED]);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED, textOf(done));
  assert.equal(artifactText(done), 'echo: polled please');
  assert.equal(done.artifacts[0]?.name, 'result');
});

test('a remote answering with a message (no task): the reply is the result', async () => {
  for (const agent of ['remote-stream', 'remote-poll']) {
    const client = await streamingClient(env.url, agent, 'JSONRPC');
    const t = (await client.sendMessage(sendRequest(userMessage(`reply to ${agent}`)))) as Task;
    assert.equal(t.status?.state, TaskState.TASK_STATE_COMPLETED, textOf(t));
    assert.equal(artifactText(t), `re: reply to ${agent}`);
  }
});

test('input required passes through; the follow-up reaches the same remote task and completes it', async () => {
  const client = await streamingClient(env.url, 'remote-stream', 'JSONRPC');
  const first = (await client.sendMessage(sendRequest(userMessage('ask for it')))) as Task;
  assert.equal(first.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, textOf(first));
  assert.equal(textOf(first), 'Which invoice?');
  const second = (await client.sendMessage(
    sendRequest(userMessage('ask INV-1', { taskId: first.id, contextId: first.contextId })),
  )) as Task;
  assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(await streamingRemote.stats()));
  assert.match(artifactText(second), /answered: ask INV-1/);
  const stats = await streamingRemote.stats();
  const turns = stats.messages.filter((m) => m.text.startsWith('ask'));
  assert.equal(turns.length, 2);
  assert.equal(turns[0]!.taskId, turns[1]!.taskId, 'the follow-up continues the same remote task');
});

test('auth required passes through as an interrupted state; the follow-up continues the remote task', async () => {
  const client = await streamingClient(env.url, 'remote-stream', 'JSONRPC');
  const first = (await client.sendMessage(sendRequest(userMessage('auth please')))) as Task;
  assert.equal(first.status?.state, TaskState.TASK_STATE_AUTH_REQUIRED, textOf(first));
  assert.equal(textOf(first), 'Sign in to the quotes system first');
  const second = (await client.sendMessage(
    sendRequest(userMessage('auth done', { taskId: first.id, contextId: first.contextId })),
  )) as Task;
  assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED, textOf(second));
  assert.equal(artifactText(second), 'authorized: auth done');
  const turns = (await streamingRemote.stats()).messages.filter((m) => m.text.startsWith('auth'));
  assert.equal(turns.length, 2);
  assert.equal(turns[0]!.taskId, turns[1]!.taskId);
});

test('cancel reaches the remote (CancelTask) and the mesh task ends CANCELED', async () => {
  const client = await streamingClient(env.url, 'remote-stream', 'JSONRPC');
  const started = (await client.sendMessage(sendRequest(userMessage('wait for cancel'), { returnImmediately: true }))) as Task;
  const stats = await eventually('the remote task runs', async () => {
    const s = await streamingRemote.stats();
    return s.messages.find((m) => m.text === 'wait for cancel') ? s : undefined;
  });
  const remoteTaskId = stats.messages.find((m) => m.text === 'wait for cancel')!.taskId;
  // Past WORKING on the mesh side: the bridge has recorded the remote task.
  await until(client, started.id, [TaskState.TASK_STATE_WORKING]);
  await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
  const ended = await until(client, started.id, [TaskState.TASK_STATE_CANCELED]);
  assert.equal(ended.status?.state, TaskState.TASK_STATE_CANCELED);
  await eventually('the remote saw CancelTask', async () => (await streamingRemote.stats()).cancels.includes(remoteTaskId));
});

test('a tenant cannot reach another tenant\u2019s private remote agent; its owner can', async () => {
  const acme = await streamingClient(env.url, 'remote-private', 'JSONRPC');
  const own = (await acme.sendMessage(sendRequest(userMessage('private hello from acme')))) as Task;
  assert.equal(own.status?.state, TaskState.TASK_STATE_COMPLETED, textOf(own));
  await assert.rejects(async () => {
    const globex = await streamingClient(env.url, 'remote-private', 'JSONRPC', 'demo-globex');
    await globex.sendMessage(sendRequest(userMessage('private hello from globex')));
  });
  const texts = (await streamingRemote.stats()).messages.map((m) => m.text);
  assert.ok(texts.includes('private hello from acme'));
  assert.ok(!texts.includes('private hello from globex'));
});

test('429 with Retry-After pauses only that remote agent: the other keeps completing, the paused one completes after', async () => {
  const busy = await streamingClient(env.url, 'remote-busy', 'JSONRPC');
  const other = await streamingClient(env.url, 'remote-stream', 'JSONRPC');
  const started = (await busy.sendMessage(sendRequest(userMessage('after the pause'), { returnImmediately: true }))) as Task;
  await eventually('the busy remote refused a request', async () => (await busyRemote.stats()).refused >= 1);
  // While remote-busy is paused, remote-stream on the same bridge completes a task.
  const meanwhile = (await other.sendMessage(sendRequest(userMessage('not paused')))) as Task;
  assert.equal(meanwhile.status?.state, TaskState.TASK_STATE_COMPLETED, textOf(meanwhile));
  const done = await until(busy, started.id, [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED]);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED, textOf(done));
  const stats = await busyRemote.stats();
  assert.equal(stats.refused, 2);
  // The refused sends created nothing: exactly one remote task for the execution.
  assert.equal(stats.tasksCreated, 1);
});
