import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { TaskState, type Task } from '@a2a-js/sdk';
import { defineAgent, textOf } from '@mesh/agent-sdk';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { BusAdmin } from '@mesh/bus';
import { ConsumerGroups, DEFAULT_CHANNEL_KEY_TEMPLATE, Headers } from '@mesh/contract';
import { eventually, freshDatabase, sql, testRun } from '../support/infra.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';

// One tenant's work spreads over two workers of the same agent under the default channel key
// ({tenant}:{agent_id}:{context_id}), while a task's turns and its cancel still reach it in order.
// Everything real: the dispatcher, two agents runtimes, the broker and Postgres.

const AGENT = 'spread-agent';
const PARTITIONS = 4;

/** The turns each worker's handler saw: task id and turn, in the order they ran. */
const ran: Array<{ worker: string; taskId: string; turn: number; text: string }> = [];
const started = new Set<string>();

/** The same agent as each worker process runs it; the handler notes which worker it is. */
const spreadAgent = (worker: string) =>
  defineAgent({
    id: AGENT,
    card: { name: 'Spread' },
    channel: { partitions: PARTITIONS },
    handler: async (task, ctx) => {
      const text = textOf(task.parts);
      ran.push({ worker, taskId: task.taskId, turn: task.turn, text });
      started.add(task.taskId);
      if (text.startsWith('ask')) return ctx.askForInput('which one?');
      if (text.startsWith('hold')) {
        // Runs until its cancel arrives.
        await new Promise<void>((resolve) => task.signal.addEventListener('abort', () => resolve(), { once: true }));
        return ctx.fail('canceled');
      }
      await ctx.artifact({ name: 'answer', parts: [{ type: 'text', text: `done ${text}` }] });
      return ctx.complete();
    },
  });

const env = await startTestDispatcher('scaling');
// As the directory registers an agent whose definition names no template: the default.
await publishAgents(env.kafka, env.topics, [
  agentRecord(AGENT, { channel: { keyTemplate: DEFAULT_CHANNEL_KEY_TEMPLATE, partitions: PARTITIONS } }),
]);
const agentsDb = await freshDatabase('scaling-agents');
const worker = async (workerId: string) => {
  const w = await startAgents(
    {
      ...loadAgentsConfig({
        KAFKA_BROKERS: testRun().brokers.join(','),
        TOPIC_PREFIX: env.prefix,
        DATABASE_URL: agentsDb,
        AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
        AGENTS_RUN: AGENT,
        AGENTS_WORKER_ID: workerId,
      }),
      AGENTS_PORT: 0,
    },
    { [AGENT]: spreadAgent(workerId) },
  );
  after(() => w.stop());
  return w;
};
await worker('worker-a');
await worker('worker-b');

// Both workers in the group, each holding partitions, before any task is sent: otherwise the
// first to join reads everything until the rebalance.
const admin = new BusAdmin(env.kafka);
after(() => admin.close());
const topic = env.topics.commands(AGENT);
await eventually(
  'both workers hold partitions of the command topic',
  async () => {
    const g = await admin.describeGroup(new ConsumerGroups(env.prefix).agentWorkers(AGENT));
    return g.state === 'Stable' && g.members.length === 2 && g.members.every((m) => (m.assignment[topic] ?? []).length > 0);
  },
  60000,
);
const client = await a2aClient(env.url, AGENT, 'HTTP+JSON');

/** The worker id in each finished turn's ledger row (owner is `{workerId}/{attempt nonce}`). */
async function ledgerWorkers(taskIds: string[]): Promise<Map<string, string[]>> {
  const rows = await sql<{ task_id: string; turn: number; owner: string }>(
    agentsDb,
    `SELECT task_id, turn, owner FROM agents.executions WHERE task_id = ANY($1) AND state = 'finished' ORDER BY task_id, turn`,
    [taskIds],
  );
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.task_id, [...(out.get(r.task_id) ?? []), r.owner.split('/')[0]!]);
  return out;
}

/** Every record on the command topic for `taskId`: its kind, key and partition, in the order written. */
async function commandsOf(
  taskIds: Set<string>,
): Promise<Array<{ taskId: string; kind: string; key: string; partition: number; offset: bigint }>> {
  const offsets = env.kafka.admin();
  await offsets.connect();
  const ends = new Map((await offsets.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
  await offsets.disconnect();
  const out: Array<{ taskId: string; kind: string; key: string; partition: number; offset: bigint }> = [];
  const consumer = env.kafka.consumer({ groupId: `scaling-reader-${randomUUID()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([p]) => p));
    await new Promise<void>((resolve, reject) => {
      if (pending.size === 0) return resolve();
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            const h = (name: string) => message.headers?.[name]?.toString();
            const taskId = h(Headers.taskId);
            if (taskId && taskIds.has(taskId))
              out.push({ taskId, kind: h(Headers.kind)!, key: message.key!.toString(), partition, offset: BigInt(message.offset) });
            if (BigInt(message.offset) + 1n >= ends.get(partition)!) pending.delete(partition);
            if (pending.size === 0) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return out;
}

test("50 tasks of one tenant: both workers run some, each task's turns where its context's key sends them", async () => {
  const tasks = (await Promise.all(
    Array.from({ length: 50 }, (_, i) => client.sendMessage(sendRequest(userMessage(`task ${i}`), { returnImmediately: true }))),
  )) as Task[];
  const ids = tasks.map((t) => t.id);
  assert.equal(new Set(tasks.map((t) => t.contextId)).size, 50, 'each task its own conversation');
  await eventually(
    'all 50 tasks completed',
    async () => {
      const [{ n }] = await sql<{ n: number }>(
        env.databaseUrl,
        `SELECT count(*)::int AS n FROM dispatcher.tasks WHERE id = ANY($1) AND state = 'TASK_STATE_COMPLETED'`,
        [ids],
      );
      return n === 50;
    },
    60000,
  );
  const byTask = await ledgerWorkers(ids);
  assert.equal(byTask.size, 50, 'every task has its finished turn in the execution ledger');
  const perWorker = new Map<string, number>();
  for (const [, workers] of byTask) for (const w of workers) perWorker.set(w, (perWorker.get(w) ?? 0) + 1);
  assert.deepEqual([...perWorker.keys()].sort(), ['worker-a', 'worker-b'], `turns per worker: ${JSON.stringify([...perWorker])}`);
  assert.equal(
    [...perWorker.values()].reduce((a, b) => a + b, 0),
    50,
  );

  // The commands are keyed by tenant, agent and context, over more than one partition.
  const records = await commandsOf(new Set(ids));
  assert.equal(records.length, 50);
  const contextOf = new Map(tasks.map((t) => [t.id, t.contextId]));
  for (const r of records) assert.equal(r.key, `acme:${AGENT}:${contextOf.get(r.taskId)}`);
  assert.ok(new Set(records.map((r) => r.partition)).size > 1, 'one tenant on more than one partition');
});

test('a multi-turn task: its follow-up after INPUT_REQUIRED is keyed as its first turn and runs after it', async () => {
  const asked = (await client.sendMessage(sendRequest(userMessage('ask for more')))) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(asked.status));
  const done = (await client.sendMessage(
    sendRequest(userMessage('the blue one', { taskId: asked.id, contextId: asked.contextId })),
  )) as Task;
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);

  const turns = ran.filter((r) => r.taskId === asked.id);
  assert.deepEqual(
    turns.map((t) => t.text),
    ['ask for more', 'the blue one'],
  );
  assert.equal(turns[1]!.turn, turns[0]!.turn + 1);
  const records = await commandsOf(new Set([asked.id]));
  assert.deepEqual(
    records.map((r) => r.kind),
    ['task.run', 'task.run'],
  );
  assert.equal(new Set(records.map((r) => `${r.key}@${r.partition}`)).size, 1, 'both turns on one key and partition');
  assert.ok(records[0]!.offset < records[1]!.offset, 'the follow-up after the first turn');
  assert.equal(records[0]!.key, `acme:${AGENT}:${asked.contextId}`);
  // Whichever worker holds that partition ran both turns.
  const [workers] = [...(await ledgerWorkers([asked.id])).values()];
  assert.equal(new Set(workers).size, 1, `turns ran on ${JSON.stringify(workers)}`);
});

test('a cancel reaches its running task: same key and partition as its run, after it', async () => {
  const task = (await client.sendMessage(sendRequest(userMessage('hold on'), { returnImmediately: true }))) as Task;
  await eventually('the task is running', () => started.has(task.id), 30000);
  const canceled = await client.cancelTask({ id: task.id, tenant: '', metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  const records = await eventually(
    'the cancel is on the command topic',
    async () => {
      const r = await commandsOf(new Set([task.id]));
      return r.length === 2 ? r : undefined;
    },
    30000,
  );
  assert.deepEqual(
    records.map((r) => r.kind),
    ['task.run', 'task.cancel'],
  );
  assert.equal(new Set(records.map((r) => `${r.key}@${r.partition}`)).size, 1, 'run and cancel on one key and partition');
  assert.ok(records[0]!.offset < records[1]!.offset);
  // The worker's handler saw its abort and ended: the ledger row is finished, canceled.
  const rows = await eventually(
    'the turn finished in the ledger',
    async () => {
      const r = await sql<{ final_state: string | null }>(
        agentsDb,
        `SELECT final_state FROM agents.executions WHERE task_id = $1 AND state = 'finished'`,
        [task.id],
      );
      return r.length ? r : undefined;
    },
    30000,
  );
  assert.equal(rows.length, 1);
});
