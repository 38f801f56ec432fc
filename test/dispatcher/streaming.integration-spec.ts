import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, startReplicaProcess, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { collect, describe, streamingClient } from '../support/streaming.js';

// Replica B runs in-process; replica A is a separate process so it can be SIGKILLed. Their polls
// are too slow to matter here: what one replica stores reaches the other's streams because it
// tells it (TaskCommitFeed), whichever of them projects the task.
const env = await startTestDispatcher('stream', {}, { DISPATCHER_STREAM_POLL_MS: '600000', DISPATCHER_WAIT_POLL_MS: '600000' });
await publishAgents(env.kafka, env.topics, [agentRecord('slow')]);
const worker = await startManualWorker(env.kafka, env.topics, 'slow');
after(() => worker.stop());

const { url: urlA, proc: procA } = await startReplicaProcess(env, 'slow');
await eventually('replica B serves the agent', async () => (await fetch(`${env.url}/a2a/slow/.well-known/agent-card.json`)).ok);

test('the card claims streaming', async () => {
  const card = (await (await fetch(`${env.url}/a2a/slow/.well-known/agent-card.json`)).json()) as { capabilities: { streaming: boolean } };
  assert.equal(card.capabilities.streaming, true);
});

test('send on A, subscribe on B (twice), kill A mid-task: B streams to the end', { timeout: 120000 }, async () => {
  const onA = collect((await streamingClient(urlA, 'slow', 'JSONRPC')).sendMessageStream(sendRequest(userMessage('long job'))));
  await eventually('A streams the task', () => onA.events.length >= 1);
  assert.equal(onA.events[0].payload?.$case, 'task');
  const taskId = onA.events[0].payload?.$case === 'task' ? onA.events[0].payload.value.id : '';

  const clientB = await streamingClient(env.url, 'slow', 'HTTP+JSON');
  const onB = collect(clientB.resubscribeTask({ tenant: '', id: taskId }));
  const closeB2 = new AbortController();
  const onB2 = collect(clientB.resubscribeTask({ tenant: '', id: taskId }, { signal: closeB2.signal }));
  await eventually('B streams the snapshot', () => onB.events.length >= 1 && onB2.events.length >= 1);
  assert.deepEqual(describe(onB.events), ['task:SUBMITTED']);

  const cmd = await worker.run(taskId);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING', message: 'step 1' }]);
  await eventually('both replicas stream WORKING', () => onA.events.length >= 2 && onB.events.length >= 2 && onB2.events.length >= 2);
  // Closing one subscriber of B does not disturb the other.
  closeB2.abort();

  procA.child.kill('SIGKILL');
  await procA.exited;
  // A duplicate and a late WORKING must not show up again; the artifact and COMPLETED must.
  await worker.emit(cmd, [
    { seq: 0, state: 'WORKING' },
    { seq: 1, artifact: 'done' },
    { seq: 2, state: 'WORKING' },
    { seq: 3, state: 'COMPLETED' },
  ]);
  await Promise.race([onB.done, new Promise((_, reject) => setTimeout(() => reject(new Error('B stream did not end')), 60000))]);
  assert.deepEqual(describe(onB.events), ['task:SUBMITTED', 'status:WORKING', 'artifact:done', 'status:WORKING', 'status:COMPLETED']);
  assert.deepEqual(describe(onB2.events).slice(0, 2), ['task:SUBMITTED', 'status:WORKING']);
});

test('a stream ends at CANCELED when the task is canceled; the worker gets the cancel on the task key', { timeout: 60000 }, async () => {
  const client = await streamingClient(env.url, 'slow', 'JSONRPC');
  const s = collect(client.sendMessageStream(sendRequest(userMessage('to cancel'))));
  await eventually('task streamed', () => s.events.length >= 1);
  const taskId = s.events[0].payload?.$case === 'task' ? s.events[0].payload.value.id : '';
  const cmd = await worker.run(taskId);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually('WORKING streamed', () => s.events.length >= 2);
  await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
  await s.done;
  assert.deepEqual(describe(s.events), ['task:SUBMITTED', 'status:WORKING', 'status:CANCELED']);
  const cancel = await eventually('cancel command', () =>
    worker.commands.find((c) => c.kind === 'task.cancel' && c.identity.taskId === taskId),
  );
  assert.equal(cancel.identity.executionId, cmd.identity.executionId);
});

test('subscribing to a terminal task is refused as unsupported', { timeout: 60000 }, async () => {
  const client = await streamingClient(env.url, 'slow', 'JSONRPC');
  const s = collect(client.sendMessageStream(sendRequest(userMessage('quick'))));
  await eventually('task streamed', () => s.events.length >= 1);
  const taskId = s.events[0].payload?.$case === 'task' ? s.events[0].payload.value.id : '';
  await worker.emit(await worker.run(taskId), [
    { seq: 0, artifact: 'x' },
    { seq: 1, state: 'COMPLETED' },
  ]);
  await s.done;
  await assert.rejects(async () => {
    for await (const _ of client.resubscribeTask({ tenant: '', id: taskId })) void _;
  }, /terminal/);
});

test("a streamed message's historyLength applies to the Task that opens its stream", { timeout: 60000 }, async () => {
  const client = await streamingClient(env.url, 'slow', 'JSONRPC');
  for (const [historyLength, expected] of [
    [0, 0],
    [undefined, 1],
  ] as const) {
    const s = collect(client.sendMessageStream(sendRequest(userMessage('history'), historyLength === undefined ? {} : { historyLength })));
    await eventually('task streamed', () => s.events.length >= 1);
    const first = s.events[0].payload;
    assert.equal(first?.$case, 'task');
    const task = first?.$case === 'task' ? first.value : undefined;
    assert.equal(task?.history.length, expected, `historyLength ${historyLength}`);
    await worker.emit(await worker.run(task!.id), [
      { seq: 0, artifact: 'x' },
      { seq: 1, state: 'COMPLETED' },
    ]);
    await s.done;
  }
});
