import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { collect, describe, streamingClient } from '../support/streaming.js';

// The event fan-out reads the events topic only while a task is followed on the replica; here it
// rests 200 ms after the last stream closed, so every subscription below wakes it.
const env = await startTestDispatcher('fanout', {}, { DISPATCHER_FANOUT_IDLE_MS: '200' });
await publishAgents(env.kafka, env.topics, [agentRecord('steps')]);
const worker = await startManualWorker(env.kafka, env.topics, 'steps');
after(() => worker.stop());
await eventually('the agent is served', async () => (await fetch(`${env.url}/a2a/steps/.well-known/agent-card.json`)).ok);

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  test(`${binding}: a subscription that wakes a resting fan-out streams every later event, and none it already showed`, async () => {
    const client = await a2aClient(env.url, 'steps', binding);
    const sent = await client.sendMessage(sendRequest(userMessage('two parts'), { returnImmediately: true }));
    const taskId = (sent as Task).id;
    const cmd = await worker.run(taskId);
    // Events produced and stored while nobody follows the task (the fan-out rests).
    await new Promise((r) => setTimeout(r, 400));
    await worker.emit(cmd, [
      { seq: 0, state: 'WORKING' },
      { seq: 1, artifact: 'part one' },
    ]);
    await eventually(
      'part one stored',
      async () => artifactText(await client.getTask({ tenant: '', id: taskId, historyLength: 0 })) === 'part one',
    );

    // The snapshot holds WORKING and part one; the fan-out wakes at the projector's committed
    // offsets, so it may deliver those two events again: they must not be shown twice.
    const stream = collect((await streamingClient(env.url, 'steps', binding)).resubscribeTask({ tenant: '', id: taskId }));
    await eventually('the snapshot is streamed', () => stream.events.length >= 1);
    await worker.emit(cmd, [
      { seq: 2, artifact: 'part two' },
      { seq: 3, state: 'COMPLETED' },
    ]);
    await Promise.race([stream.done, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream did not end')), 30000))]);
    assert.deepEqual(describe(stream.events), ['task:WORKING', 'artifact:part two', 'status:COMPLETED']);
    const snapshot = stream.events[0].payload?.$case === 'task' ? stream.events[0].payload.value : undefined;
    assert.equal(snapshot && artifactText(snapshot), 'part one');
  });
}
