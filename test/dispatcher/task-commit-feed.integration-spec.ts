import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '@a2a-js/sdk';
import { TaskCommitFeed, TaskCommitSignal } from '@mesh/app-dispatcher';
import { eventually, sql } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';

// A replica's projection tells the others which tasks it changed (NOTIFY from its own statement);
// the observer here is another replica's TaskCommitFeed on the same database.
const env = await startTestDispatcher('commit-feed');
await publishAgents(env.kafka, env.topics, [agentRecord('steps')]);
const worker = await startManualWorker(env.kafka, env.topics, 'steps');
after(() => worker.stop());
await eventually('the agent is served', async () => (await fetch(`${env.url}/a2a/steps/.well-known/agent-card.json`)).ok);

const signal = new TaskCommitSignal();
const heard: string[] = [];
let readAll = 0;
const observer = new TaskCommitFeed(
  signal,
  { storedElsewhere: (taskId) => void heard.push(taskId), readAll: () => void (readAll += 1) },
  { url: env.databaseUrl, retryMs: 100 },
);
await observer.start();
after(() => observer.stop());

const notify = (payload: string) => sql(env.databaseUrl, 'SELECT pg_notify($1, $2)', [signal.channel, payload]);

test("a projection on another replica names the task it changed once stored; the replica's own are skipped", async () => {
  assert.equal(observer.listening, true);
  const client = await a2aClient(env.url, 'steps', 'JSONRPC');
  const taskId = ((await client.sendMessage(sendRequest(userMessage('one step'), { returnImmediately: true }))) as Task).id;
  assert.equal(heard.includes(taskId), false, 'a new task is not told: nobody could watch it yet');
  const cmd = await worker.run(taskId);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually('the observer hears the task', () => heard.includes(taskId));
  const [row] = await sql<{ event_seq: string }>(env.databaseUrl, 'SELECT event_seq FROM dispatcher.tasks WHERE id = $1', [taskId]);
  assert.equal(Number(row.event_seq) >= 1, true, 'told after the change was stored');

  heard.length = 0;
  await notify(`${signal.sender} mine-1,mine-2`);
  await notify('another-replica a-1,,a-2');
  await eventually('the other replica is heard', () => heard.length === 2);
  assert.deepEqual(heard, ['a-1', 'a-2'], 'its own notifications skipped, empty ids ignored');
});

test('a cancel committed on another replica is told too', async () => {
  const client = await a2aClient(env.url, 'steps', 'HTTP+JSON');
  const taskId = ((await client.sendMessage(sendRequest(userMessage('to cancel'), { returnImmediately: true }))) as Task).id;
  const cmd = await worker.run(taskId);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually('WORKING heard', () => heard.includes(taskId));
  heard.length = 0;
  await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
  await eventually('the cancel is heard', () => heard.includes(taskId));
});

test('a lost connection listens again, and then every watched task reads once (what was missed was never told)', async () => {
  const before = readAll;
  const ended = await sql<{ ok: boolean }>(
    env.databaseUrl,
    `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
     WHERE datname = current_database() AND query = $1 AND pid <> pg_backend_pid()`,
    [`LISTEN ${signal.channel}`],
  );
  assert.ok(ended.length >= 2, "the observer's and the dispatcher's listening connections ended");
  await eventually('listening again', () => observer.listening && readAll === before + 1);
  heard.length = 0;
  await notify('another-replica after-1');
  await eventually('heard after listening again', () => heard.includes('after-1'));
});
