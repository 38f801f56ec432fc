import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { logLevel } from 'kafkajs';
import { DEMO_API_KEYS } from '@mesh/auth';
import { createKafka } from '@mesh/bus';
import { TopicDefinitions, TopicNames } from '@mesh/contract';
import { eventually, freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, standInForDirectory } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';
import { streamingClient } from '../support/streaming.js';
import { freePort, spawnNode } from '../support/processes.js';

// The dispatcher as its own process (apps/dispatcher/dist/main.js), so what it prints is what an
// operator's log shipper reads: its stdout and stderr, whole.

const prefix = uniquePrefix('logs');
const topics = new TopicNames(prefix);
const kafka = createKafka({ brokers: testRun().brokers, clientId: 'test-logs' }, { logLevel: logLevel.NOTHING });
const port = await freePort();
const url = `http://localhost:${port}`;
await standInForDirectory(kafka, new TopicDefinitions(prefix));
const dispatcher = spawnNode('apps/dispatcher/dist/main.js', {
  KAFKA_BROKERS: testRun().brokers.join(','),
  TOPIC_PREFIX: prefix,
  DATABASE_URL: await freshDatabase('logs'),
  DISPATCHER_PORT: String(port),
  AUTH_API_KEYS: DEMO_API_KEYS,
  EVENTS_TOPIC_PARTITIONS: '2',
  // The echo worker sends no heartbeats.
  DISPATCHER_REQUIRE_HEALTHY_WORKER: 'false',
  // Every line the process can write, down to the SDK's refusals and kafkajs's start-up retries.
  LOG_LEVEL: 'debug',
});
await eventually(
  'dispatcher ready',
  async () => {
    if (dispatcher.child.exitCode !== null) throw new Error(`the dispatcher exited: ${dispatcher.stderr().slice(-2000)}`);
    return (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200;
  },
  60000,
  200,
);
await publishAgents(kafka, topics, [agentRecord('echo')]);
const worker = await startEchoWorker(kafka, topics, 'echo');
after(() => worker.stop());
await eventually('agent served', async () => (await fetch(`${url}/a2a/echo/.well-known/agent-card.json`)).ok, 30000, 100);

test('a dispatcher that serves a refused subscription prints JSON lines only, the SDK output among them', { timeout: 120000 }, async () => {
  const client = await a2aClient(url, 'echo', 'JSONRPC');
  const task = (await client.sendMessage(sendRequest(userMessage('hello')))) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
  // The SDK's JSON-RPC handler prints `Pre-stream error for request …` with console.error when a
  // stream is refused before its first event: here, a subscription to a terminal task.
  const streaming = await streamingClient(url, 'echo', 'JSONRPC');
  await assert.rejects(async () => {
    for await (const _ of streaming.resubscribeTask({ tenant: '', id: task.id })) void _;
  }, /terminal/);
  const parsed = () =>
    dispatcher
      .stdout()
      .split('\n')
      .filter((l) => l.length > 0)
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return assert.fail(`a stdout line is not JSON: ${line.slice(0, 500)}`);
        }
      });
  const sdkLine = await eventually('the SDK line in the log', () =>
    parsed().find((l) => l.src === 'a2a-sdk' && /Pre-stream error for request/.test(String(l.msg))),
  );
  assert.equal(sdkLine.level, 'debug', `a refusal the caller was answered with is not an error of the service: ${JSON.stringify(sdkLine)}`);

  dispatcher.child.kill('SIGTERM');
  assert.deepEqual(await dispatcher.exited, { code: 0, signal: null });
  const lines = parsed();
  for (const line of lines) {
    assert.equal(line.service, 'dispatcher', JSON.stringify(line));
    assert.equal(typeof line.level, 'string', JSON.stringify(line));
    assert.match(String(line.time), /^\d{4}-\d\d-\d\dT/, JSON.stringify(line));
  }
  assert.ok(
    lines.some((l) => typeof l.req === 'object'),
    'access lines go through the same logger',
  );
  assert.equal(dispatcher.stderr(), '', 'nothing on stderr');
});
