import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import type { CommandProducer, OutboxCommand, SendOutcome } from '@mesh/app-dispatcher';
import { eventually, sql } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';

/**
 * Makes producing fail at the producer boundary, on the shared broker (which must never be
 * stopped): the relay's behaviour when Kafka refuses, with exact control of when. The real
 * outage (a private broker killed and restarted) is kafka-outage.integration-spec.ts.
 */
class GatedProducer implements CommandProducer {
  down = false;
  attempts = 0;
  probes = 0;
  constructor(private readonly inner: CommandProducer) {}
  async send(messages: OutboxCommand[]): Promise<SendOutcome[]> {
    this.attempts += 1;
    if (this.down) throw refused();
    return this.inner.send(messages);
  }
  async ready(): Promise<void> {
    this.probes += 1;
    if (this.down) throw refused();
    await this.inner.ready();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

const refused = () => new Error('KafkaJSConnectionError: Connection error: connect ECONNREFUSED (simulated outage)');

let gate: GatedProducer | undefined;
const env = await startTestDispatcher('durability', { wrapProducer: (p) => (gate = new GatedProducer(p)) });
await publishAgents(env.kafka, env.topics, [
  agentRecord('echo'),
  agentRecord('burst', { channel: { keyTemplate: '{tenant}:{agent_id}:{context_id}', partitions: 3 } }),
]);
const worker = await startEchoWorker(env.kafka, env.topics, 'echo');
const burstWorker = await startEchoWorker(env.kafka, env.topics, 'burst', 3);
after(async () => {
  await worker.stop();
  await burstWorker.stop();
});
await eventually('agents served', async () => (await fetch(`${env.url}/a2a/burst/.well-known/agent-card.json`)).ok);

const outboxSize = async () => (await sql<{ n: number }>(env.databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.outbox`))[0].n;

test('a burst of 1,000 concurrent sends yields 1,000 tasks and 1,000 commands, no more', async () => {
  const client = await a2aClient(env.url, 'burst', 'HTTP+JSON');
  const results = (await Promise.all(
    Array.from({ length: 1000 }, (_, i) =>
      client.sendMessage(sendRequest(userMessage(`burst ${i}`, { contextId: `c${i % 17}` }), { returnImmediately: true })),
    ),
  )) as Task[];
  assert.equal(new Set(results.map((t) => t.id)).size, 1000);
  const [{ n }] = await sql<{ n: number }>(env.databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.tasks WHERE agent_id = 'burst'`);
  assert.equal(n, 1000);
  await eventually('all commands consumed', () => burstWorker.commands.length >= 1000, 60000);
  await eventually(
    'all tasks completed',
    async () => {
      const [{ done }] = await sql<{ done: number }>(
        env.databaseUrl,
        `SELECT count(*)::int AS done FROM dispatcher.tasks WHERE agent_id = 'burst' AND state = 'TASK_STATE_COMPLETED'`,
      );
      return done === 1000;
    },
    60000,
  );
  assert.equal(burstWorker.commands.length, 1000, 'exactly one command per task');
  assert.equal(new Set(burstWorker.commands.map((c) => c.identity.executionId)).size, 1000);
  assert.equal(await outboxSize(), 0);
});

test('Kafka unavailable during accept: tasks are accepted, and delivered once it is back', async () => {
  assert.ok(gate);
  const client = await a2aClient(env.url, 'echo', 'JSONRPC');
  gate.down = true;
  const before = gate.attempts;
  const accepted = (await Promise.all(
    Array.from({ length: 20 }, (_, i) => client.sendMessage(sendRequest(userMessage(`while down ${i}`), { returnImmediately: true }))),
  )) as Task[];
  assert.ok(accepted.every((t) => t.status?.state === TaskState.TASK_STATE_SUBMITTED));
  await eventually('relay tried and failed', () => gate!.attempts > before);
  // Once a send failed, the relay asks Kafka before claiming again: no more sends (each would hold
  // a claim transaction for the client's whole retry) until Kafka answers.
  const sends = gate.attempts;
  const probes = gate.probes;
  await eventually('relay probed Kafka twice more', () => gate!.probes >= probes + 2, 10000);
  assert.equal(gate.attempts, sends, 'no send while Kafka does not answer');
  assert.equal(await outboxSize(), 20, 'commands wait in the outbox');
  assert.ok(!worker.commands.some((c) => accepted.some((t) => t.id === c.identity.taskId)));
  gate.down = false;
  await eventually(
    'delivered after the outage',
    async () => {
      const tasks = await Promise.all(accepted.map((t) => client.getTask({ id: t.id, tenant: '', historyLength: undefined })));
      return tasks.every((t) => t.status?.state === TaskState.TASK_STATE_COMPLETED);
    },
    30000,
  );
  assert.equal(await outboxSize(), 0);
});

test('a restarted dispatcher serves every task it accepted, and delivers what was still in its outbox', async () => {
  assert.ok(gate);
  const client = await a2aClient(env.url, 'echo', 'HTTP+JSON');
  const done = (await client.sendMessage(sendRequest(userMessage('before restart')))) as Task;
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  gate.down = true;
  const pending = (await client.sendMessage(sendRequest(userMessage('undelivered'), { returnImmediately: true }))) as Task;
  await env.dispatcher.stop();

  // A new process on the same database and topics, with a working producer.
  const second = await env.restart({ wrapProducer: (p) => p });
  const again = await a2aClient(second.url, 'echo', 'HTTP+JSON');
  const served = await again.getTask({ id: done.id, tenant: '', historyLength: undefined });
  assert.equal(served.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(served.artifacts, done.artifacts);
  const delivered = await eventually(
    'outbox drained by the new process',
    async () => {
      const t = await again.getTask({ id: pending.id, tenant: '', historyLength: undefined });
      return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
    },
    30000,
  );
  assert.equal(delivered.id, pending.id);
  const [{ n }] = await sql<{ n: number }>(env.databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.tasks`);
  const list = await again.listTasks({
    tenant: '',
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: 100,
    pageToken: '',
    includeArtifacts: false,
    historyLength: undefined,
    statusTimestampAfter: undefined,
  });
  assert.equal(list.totalSize, n - 1000, 'every echo task accepted before the restart is listed');
});
