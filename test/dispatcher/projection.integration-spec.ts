import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import pg from 'pg';
import { ConsumerGroups, encodeEnvelope, Envelopes, type Envelope, type Identity } from '@mesh/contract';
import { createLogger } from '@mesh/telemetry';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';

/** Warnings the dispatcher logged (a failed projection attempt is one). */
const warnings: string[] = [];
const env = await startTestDispatcher('projection', {
  logger: createLogger('dispatcher', 'warn', { write: (line: string) => void warnings.push(line) }),
});
await publishAgents(env.kafka, env.topics, [agentRecord('manual')]);
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/manual/.well-known/agent-card.json`)).ok);
const producer = env.kafka.producer();
await producer.connect();
after(() => producer.disconnect());
const client = await a2aClient(env.url, 'manual', 'JSONRPC');

/** Publishes events as a worker would, keyed by task id. */
async function publish(...events: Envelope[]) {
  await producer.send({
    topic: env.topics.events(),
    messages: events.map((e) => {
      const w = encodeEnvelope(e);
      return { key: e.identity.taskId, value: w.value, headers: w.headers };
    }),
  });
}

async function newTask(): Promise<{ task: Task; id: Identity }> {
  const message = userMessage('manual');
  const task = (await client.sendMessage(sendRequest(message, { returnImmediately: true }))) as Task;
  const id: Identity = {
    tenant: 'acme',
    agentId: 'manual',
    taskId: task.id,
    contextId: task.contextId,
    messageId: message.messageId,
    executionId: `acme:${task.id}:1`,
    subject: 'worker',
    actor: 'worker',
  };
  return { task, id };
}

/** True once the projector committed every event published so far (so all of them were applied or ignored). */
async function projectorCaughtUp(): Promise<boolean> {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    const high = await admin.fetchTopicOffsets(env.topics.events());
    const [committed] = await admin.fetchOffsets({
      groupId: new ConsumerGroups(env.prefix).dispatcherProjector(),
      topics: [env.topics.events()],
    });
    return high.every((h) => committed.partitions.find((p) => p.partition === h.partition)?.offset === h.high || h.high === '0');
  } finally {
    await admin.disconnect();
  }
}

const get = (id: string) => client.getTask({ id, tenant: '', historyLength: undefined });
const artifact = (text: string) => ({ artifactId: 'a1', parts: [{ text }] });

test('duplicates, late events, foreign identities and unknown executions never change a task', async () => {
  const { task, id } = await newTask();
  await publish(
    Envelopes.status(id, { seq: 0, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.artifact(id, { seq: 1, artifact: artifact('result') }),
    Envelopes.status(id, { seq: 2, state: 'TASK_STATE_COMPLETED', final: true }),
    // Redelivery of seq 2 with different content, a late WORKING, and a new seq after the end.
    Envelopes.status(id, { seq: 2, state: 'TASK_STATE_FAILED', final: true }),
    Envelopes.status(id, { seq: 1, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.status(id, { seq: 3, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.artifact(id, { seq: 4, artifact: artifact('late') }),
    // Another tenant claiming the task, and an execution that never existed.
    Envelopes.status({ ...id, tenant: 'globex', executionId: `globex:${task.id}:1` }, { seq: 9, state: 'TASK_STATE_FAILED', final: true }),
    Envelopes.status({ ...id, executionId: `acme:${task.id}:7` }, { seq: 9, state: 'TASK_STATE_FAILED', final: true }),
  );
  await eventually('projector caught up', projectorCaughtUp);
  const after = await get(task.id);
  assert.equal(after.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(artifactText(after), 'result');
  assert.equal(after.artifacts.length, 1);
});

test('out of order: an event older than the last applied one is ignored; COMPLETED needs the artifact first', async () => {
  const { task, id } = await newTask();
  await publish(
    Envelopes.artifact(id, { seq: 1, artifact: artifact('first') }),
    Envelopes.status(id, { seq: 0, state: 'TASK_STATE_WORKING', final: false }),
  );
  await eventually('artifact stored', async () => (await get(task.id)).artifacts.length === 1);
  assert.equal((await get(task.id)).status?.state, TaskState.TASK_STATE_SUBMITTED, 'seq 0 after seq 1 is late and ignored');
  await publish(Envelopes.status(id, { seq: 2, state: 'TASK_STATE_COMPLETED', final: true }));
  const done = await eventually('completed', async () => {
    const t = await get(task.id);
    return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
  });
  assert.equal(artifactText(done), 'first');
});

test('a task canceled by the caller stays canceled; what its worker reports afterwards is recorded, not hidden', async () => {
  const { task, id } = await newTask();
  await publish(Envelopes.status(id, { seq: 0, state: 'TASK_STATE_WORKING', final: false }));
  await eventually('working', async () => (await get(task.id)).status?.state === TaskState.TASK_STATE_WORKING);
  const canceled = await client.cancelTask({ id: task.id, tenant: '', metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  // The worker was running the turn: its refund went through before the cancel reached it.
  const late = [
    Envelopes.status(id, { seq: 1, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.artifact(id, { seq: 2, artifact: artifact('refund R-1 issued') }),
    Envelopes.status(id, {
      seq: 3,
      state: 'TASK_STATE_COMPLETED',
      final: true,
      message: { role: 'ROLE_AGENT', parts: [{ text: 'Refunded.' }], metadata: { 'mesh/side_effects': [{ tool: 'issue_refund' }] } },
    }),
  ];
  await publish(...late);
  await eventually('projector caught up', projectorCaughtUp);
  const t = await get(task.id);
  assert.equal(t.status?.state, TaskState.TASK_STATE_CANCELED, 'the state the caller was told stays');
  assert.equal(artifactText(t), 'refund R-1 issued');
  const report = t.status?.message;
  assert.equal(report?.metadata?.['mesh/agent_state'], 'TASK_STATE_COMPLETED');
  assert.deepEqual(report?.metadata?.['mesh/side_effects'], [{ tool: 'issue_refund' }]);
  const text = (report?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
  assert.match(text, /After the task was canceled \(cancel\), the agent ended its turn as completed\. Refunded\./);
  // Delivered again (a redelivery, a re-emission by the execution ledger): nothing changes.
  await publish(...late);
  await eventually('projector caught up', projectorCaughtUp);
  const again = await get(task.id);
  assert.equal(again.artifacts.length, 1);
  assert.equal(again.history.filter((m) => m.metadata?.['mesh/agent_state']).length, 1);
});

test('a column added to the tasks table while the dispatcher runs (a newer version migrating) does not fail the projection', async () => {
  // The projection reads task rows through a statement each connection prepares once: had it
  // selected `t.*`, Postgres would refuse it from then on ("cached plan must not change result
  // type"), and events would be retried and dead-lettered instead of projected.
  const tasks = await Promise.all(Array.from({ length: 8 }, newTask));
  for (const { id } of tasks) {
    await publish(
      Envelopes.artifact(id, { seq: 0, artifact: artifact('done') }),
      Envelopes.status(id, { seq: 1, state: 'TASK_STATE_COMPLETED', final: true }),
    );
  }
  await eventually('projector caught up', projectorCaughtUp);
  // A late copy of each task's last event: its turn is closed, so each is decided on a fresh read.
  const lateCopies = async () => {
    for (const { id } of tasks) {
      await publish(Envelopes.status(id, { seq: 1, state: 'TASK_STATE_COMPLETED', final: true }));
      await eventually('projector caught up', projectorCaughtUp);
    }
  };
  await lateCopies();
  const db = new pg.Client({ connectionString: env.databaseUrl });
  await db.connect();
  try {
    await db.query('ALTER TABLE dispatcher.tasks ADD COLUMN added_by_a_newer_version text');
    const from = warnings.length;
    await lateCopies();
    assert.deepEqual(
      warnings.slice(from).filter((w) => w.includes('projecting events failed')),
      [],
    );
    for (const { task } of tasks) assert.equal((await get(task.id)).status?.state, TaskState.TASK_STATE_COMPLETED);
  } finally {
    await db.query('ALTER TABLE dispatcher.tasks DROP COLUMN IF EXISTS added_by_a_newer_version');
    await db.end();
  }
});
