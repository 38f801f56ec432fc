import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, BINDINGS, startTestDispatcher } from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { registerDemoAgent, startDemoEchoWorker } from '../support/demo-echo-agent.js';

// What bench:dispatch relies on: the public echo-agent of test/support/demo-echo-agent.ts,
// registered and served by its batch worker, answers every tenant at once — with admission
// requiring a healthy worker, as the bench's dispatcher does (heartbeats and a member in the
// agent's workers' group).
const env = await startTestDispatcher('demo', {}, { DISPATCHER_REQUIRE_HEALTHY_WORKER: 'true' });
await registerDemoAgent(env.kafka, env.topics);
const worker = await startDemoEchoWorker(env.kafka, env.topics);
after(() => worker.stop());
await eventually('echo-agent served', async () => (await fetch(`${env.url}/a2a/echo-agent/.well-known/agent-card.json`)).ok);

for (const binding of BINDINGS) {
  test(`${binding}: the demo echo-agent answers at once, for any tenant`, async () => {
    for (const token of ['demo-acme', 'demo-globex']) {
      const client = await a2aClient(env.url, 'echo-agent', binding, token);
      // The first send waits until the dispatcher has heard the worker's heartbeat and seen its group's member.
      const task = await eventually(
        'admitted',
        async () => (await client.sendMessage(sendRequest(userMessage(`hi from ${token}`)))) as Task,
      );
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(artifactText(task), `hi from ${token}`);
    }
  });
}
