import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { logLevel, type Producer } from 'kafkajs';
import { DEMO_API_KEYS } from '@mesh/auth';
import { createKafka } from '@mesh/bus';
import { ConsumerGroups, decodeEnvelope, TopicDefinitions, TopicNames, type Envelope } from '@mesh/contract';
import { eventually, freshDatabase, sql, uniquePrefix } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, standInForDirectory } from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker, type EchoWorker } from '../support/echo-worker.js';
import { freePort, spawnNode, type SpawnedProcess } from '../support/processes.js';
import { startPrivateKafka } from '../support/private-kafka.js';

// A real outage: this spec runs its own single-node broker (scripts/kafka.sh on free ports and a
// temp dir) and kills it, because the shared broker must never be stopped. The dispatcher runs as
// its own process (apps/dispatcher/dist/main.js), so "it did not crash" means the process is alive.

const setupStarted = Date.now();
const broker = await startPrivateKafka();
/** What the after hook stops, filled in as the spec starts things. */
const started: { worker?: EchoWorker; dispatcher?: SpawnedProcess; brokerDown: boolean; beating?: NodeJS.Timeout; beats?: Producer } = {
  brokerDown: false,
};
after(async () => {
  const { worker, dispatcher } = started;
  clearInterval(started.beating);
  // A test that failed during the outage: bring the broker back so the clients can leave cleanly
  // (a kafkajs consumer whose broker is gone retries forever and keeps the process alive).
  if (started.brokerDown) await broker.resume().catch(() => undefined);
  // Clients first (their disconnect needs the broker), then the dispatcher, then the broker and its data.
  await Promise.race([Promise.all([worker?.stop(), started.beats?.disconnect()]), new Promise((r) => setTimeout(r, 10000).unref())]);
  if (dispatcher && dispatcher.child.exitCode === null && dispatcher.child.signalCode === null) {
    dispatcher.child.kill('SIGKILL');
    await dispatcher.exited;
  }
  await broker.destroy();
});

const databaseUrl = await freshDatabase('outage');
const prefix = uniquePrefix('outage');
const topics = new TopicNames(prefix);
const kafka = createKafka({ brokers: broker.brokers, clientId: 'test-outage' }, { logLevel: logLevel.NOTHING });
const port = await freePort();
const url = `http://localhost:${port}`;
await standInForDirectory(kafka, new TopicDefinitions(prefix));
const dispatcher = (started.dispatcher = spawnNode('apps/dispatcher/dist/main.js', {
  KAFKA_BROKERS: broker.brokers.join(','),
  TOPIC_PREFIX: prefix,
  DATABASE_URL: databaseUrl,
  DISPATCHER_PORT: String(port),
  AUTH_API_KEYS: DEMO_API_KEYS,
  EVENTS_TOPIC_PARTITIONS: '3',
  // Admission requires a live worker heartbeat (beaten below with a 1.5 s TTL): an outage far
  // longer than that must not turn into 503 NO_HEALTHY_WORKER, since the dispatcher could not
  // hear heartbeats while it lasted.
  DISPATCHER_REQUIRE_HEALTHY_WORKER: 'true',
  // A blocking send during the outage returns its handle after this long.
  DISPATCHER_BLOCKING_TIMEOUT_MS: '2000',
  LOG_LEVEL: 'warn',
}));
const running = () => dispatcher.child.exitCode === null && dispatcher.child.signalCode === null;
const health = async (path = '/healthz') => {
  const res = await fetch(`${url}${path}`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
};
await eventually(
  'dispatcher ready',
  async () => {
    if (!running()) throw new Error(`the dispatcher exited: ${dispatcher.stderr().slice(-2000)}`);
    return (await health()).status === 200;
  },
  60000,
  200,
);
await publishAgents(kafka, topics, [agentRecord('echo')]);
// In the agent's workers' group, which admission requires a member of. A short session, so the
// group rebalances soon after the broker is back (kafkajs default: 30 s).
started.worker = await startEchoWorker(kafka, topics, 'echo', 2, {
  groupId: new ConsumerGroups(topics.prefix).agentWorkers('echo'),
  sessionTimeout: 6000,
  heartbeatInterval: 1000,
});
await eventually('agent served', async () => (await fetch(`${url}/a2a/echo/.well-known/agent-card.json`)).ok, 30000, 100);
// The worker's heartbeats: every 500 ms, TTL 1.5 s. During the outage they cannot be produced
// (the sends fail and are dropped, as a real worker's would be).
const beats = createKafka({ brokers: broker.brokers, clientId: 'test-outage-heartbeats' }, { logLevel: logLevel.NOTHING }).producer({
  retry: { retries: 0 },
});
started.beats = beats;
await beats.connect();
const beat = () =>
  beats
    .send({
      topic: topics.heartbeats(),
      messages: [{ key: 'echo', value: JSON.stringify({ agentId: 'echo', workerId: 'w1', atUnixMs: Date.now(), ttlMs: 1500 }) }],
    })
    .catch(() => undefined);
started.beating = setInterval(beat, 500);
await beat();
const setupMs = Date.now() - setupStarted;

const outboxSize = async () => (await sql<{ n: number }>(databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.outbox`))[0].n;

/** Every record of a topic, from the beginning to its current end. */
async function readTopic(topic: string): Promise<Envelope[]> {
  const admin = kafka.admin();
  await admin.connect();
  const end = (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0);
  await admin.disconnect();
  const consumer = kafka.consumer({ groupId: `${prefix}reader`, maxWaitTimeInMs: 100 });
  const seen: Envelope[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => void seen.push(decodeEnvelope({ headers: message.headers, value: message.value })),
    });
    await eventually(`${end} records read from ${topic}`, () => seen.length >= end, 30000, 100);
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

test('Kafka stopped during accept: tasks accepted before and during the outage are delivered once it returns, one command each', async (t) => {
  t.diagnostic(`setup (private broker, dispatcher process, worker) took ${setupMs} ms`);
  const t0 = Date.now();
  const at = (what: string) => t.diagnostic(`${what} at +${Date.now() - t0} ms`);
  try {
    const clients = { JSONRPC: await a2aClient(url, 'echo', 'JSONRPC'), 'HTTP+JSON': await a2aClient(url, 'echo', 'HTTP+JSON') };
    const accept = (texts: string[]) =>
      Promise.all(
        texts.map(async (text, i) => {
          const client = i % 2 === 0 ? clients.JSONRPC : clients['HTTP+JSON'];
          const task = (await client.sendMessage(sendRequest(userMessage(text), { returnImmediately: true }))) as Task;
          return { text, task };
        }),
      );

    // Before: accepted and relayed; the outbox is empty when the broker dies, so no command is in
    // flight and "exactly one command per task" is a fair expectation.
    const before = await accept(Array.from({ length: 10 }, (_, i) => `before ${i}`));
    await eventually('commands of the first tasks produced', async () => (await outboxSize()) === 0, 30000, 100);

    await broker.stop(); // SIGKILL: a crash, not a controlled shutdown; the data stays
    started.brokerDown = true;
    at('broker killed');
    const down = await eventually(
      'readiness reports Kafka failing',
      async () => {
        const h = await health();
        return h.status === 503 ? h : undefined;
      },
      30000,
      200,
    );
    assert.equal(down.body.status, 'broken');
    assert.match(down.body.checks.kafka, /^failing/);
    assert.equal(down.body.checks.postgres, 'ok');
    // Far longer than a heartbeat's TTL, so a dispatcher that counted the outage against it would refuse.
    await new Promise((r) => setTimeout(r, 3000));
    const live = await health('/livez');
    assert.deepEqual([live.status, live.body.status], [200, 'ready'], 'alive (not restarted by a liveness probe) while Kafka is down');

    // During: accepting still works (the outbox commits to Postgres); the commands wait there.
    const during = await accept(Array.from({ length: 20 }, (_, i) => `during ${i}`));
    at('20 accepted during the outage');
    assert.ok(during.every(({ task }) => task.status?.state === TaskState.TASK_STATE_SUBMITTED));
    // A blocking send cannot finish now: at its deadline it returns the handle, not an error.
    const blockingText = 'during, blocking';
    const blocking = (await clients['HTTP+JSON'].sendMessage(sendRequest(userMessage(blockingText)))) as Task;
    assert.equal(blocking.status?.state, TaskState.TASK_STATE_SUBMITTED);
    during.push({ text: blockingText, task: blocking });
    assert.equal(await outboxSize(), during.length, 'the commands accepted during the outage wait in the outbox');
    const read = await clients.JSONRPC.getTask({ id: during[0].task.id, tenant: '', historyLength: undefined });
    assert.equal(read.status?.state, TaskState.TASK_STATE_SUBMITTED, 'tasks are readable during the outage');
    assert.ok(running(), 'the dispatcher is still running during the outage');

    at('broker restarting');
    await broker.resume();
    started.brokerDown = false;
    at('broker back');
    // Right after the broker returns (before a new heartbeat can have been heard), new work is
    // still admitted: what was healthy when the outage began stays so until the dispatcher has
    // listened for a whole TTL without hearing the worker.
    const after = await accept(['just after the outage']);
    during.push(...after);

    const all = [...before, ...during];
    await eventually(
      'every accepted task COMPLETED with its artifact',
      async () => {
        for (const { text, task } of all) {
          const got = await clients['HTTP+JSON'].getTask({ id: task.id, tenant: '', historyLength: undefined });
          if (got.status?.state !== TaskState.TASK_STATE_COMPLETED || artifactText(got) !== `echo: ${text}`) return false;
        }
        return true;
      },
      90000,
      250,
    );
    at(`all ${all.length} tasks completed`);
    assert.equal(await outboxSize(), 0);
    await eventually('readiness back to ok', async () => (await health()).status === 200, 30000, 200);
    assert.ok(running(), 'the dispatcher never exited');

    // Exactly one command per task on the agent's channel: nothing lost, nothing produced twice.
    const commands = await readTopic(topics.commands('echo'));
    const perTask = new Map<string, number>();
    for (const c of commands) perTask.set(c.identity.taskId, (perTask.get(c.identity.taskId) ?? 0) + 1);
    assert.ok(commands.every((c) => c.kind === 'task.run'));
    for (const { task } of all) assert.equal(perTask.get(task.id), 1, `one command for task ${task.id}`);
    assert.equal(commands.length, all.length, 'no command for anything else');
  } catch (err) {
    t.diagnostic(`dispatcher stderr (tail): ${dispatcher.stderr().slice(-3000)}`);
    throw err;
  }
});
