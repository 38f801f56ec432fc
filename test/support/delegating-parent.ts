import { after } from 'node:test';
import kafkajs, { type Kafka, type Producer } from 'kafkajs';
import { childTaskId, encodeEnvelope, Envelopes, type TaskRunCommand, type TopicNames } from '@mesh/contract';
import { agentRecord, publishAgents, type DispatcherEnv } from './dispatcher-harness.js';
import { eventually, sql } from './infra.js';
import { startManualWorker, type ManualWorker } from './manual-worker.js';

/** Two agents a spec drives by hand — `boss` delegates to `kid` — and a producer for their workers' events. */
export interface DelegationPair {
  boss: ManualWorker;
  kid: ManualWorker;
  producer: Producer;
  /** What {@link delegateFrom} needs, for `boss` delegating to `kid`. */
  delegation: { databaseUrl: string; topics: TopicNames; producer: Producer; parent: ManualWorker; child: string };
}

/** Registers `boss` and `kid` with the spec's dispatcher, starts a manual worker for each (stopped after the file). */
export async function startDelegationPair(env: DispatcherEnv): Promise<DelegationPair> {
  await publishAgents(env.kafka, env.topics, [agentRecord('boss'), agentRecord('kid')]);
  const boss = await startManualWorker(env.kafka, env.topics, 'boss');
  const kid = await startManualWorker(env.kafka, env.topics, 'kid');
  const producer = env.kafka.producer();
  await producer.connect();
  after(async () => {
    await Promise.all([boss.stop(), kid.stop(), producer.disconnect()]);
  });
  await eventually('cards served', async () => (await fetch(`${env.url}/a2a/kid/.well-known/agent-card.json`)).ok);
  return {
    boss,
    kid,
    producer,
    delegation: { databaseUrl: env.databaseUrl, topics: env.topics, producer, parent: boss, child: 'kid' },
  };
}

/** Sets a topic's `max.message.bytes`, as an operator would (the dispatcher reads it on its own schedule). */
export async function setMaxMessageBytes(kafka: Kafka, topic: string, bytes: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'max.message.bytes', value: String(bytes) }] },
      ],
    });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Makes a task of the manual worker `parent` delegate `n` children to agent `child` (its turn
 * reports the delegation as a worker's final event does, waiting at most `timeoutMs` when given):
 * the parent's id and the children's derived ids, sorted, once the dispatcher recorded the wait.
 */
export async function delegateFrom(
  opts: { databaseUrl: string; topics: TopicNames; producer: Producer; parent: ManualWorker; child: string },
  parentTaskId: string,
  n: number,
  timeoutMs?: number,
): Promise<{ parent: string; children: string[] }> {
  const run: TaskRunCommand = await opts.parent.run(parentTaskId);
  const children = Array.from({ length: n }, (_, step) => {
    const parts = [{ text: `part ${step}` }];
    return { step, agentId: opts.child, parts, taskId: childTaskId(run.identity.executionId, step, { agentId: opts.child, parts }) };
  });
  const events = [
    Envelopes.status(run.identity, { seq: 1, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.status(run.identity, {
      seq: 2,
      state: 'TASK_STATE_WORKING',
      final: true,
      delegation: { join: 'all', children, ...(timeoutMs ? { timeoutMs } : {}) },
    }),
  ];
  await opts.producer.send({
    topic: opts.topics.events(),
    acks: -1,
    messages: events.map((e) => ({ key: parentTaskId, ...encodeEnvelope(e) })),
  });
  await eventually('the delegation recorded', async () => {
    const rows = await sql(opts.databaseUrl, `SELECT 1 FROM dispatcher.delegations WHERE parent_task_id = $1`, [parentTaskId]);
    return rows.length === 1;
  });
  return { parent: parentTaskId, children: children.map((c) => c.taskId).sort() };
}
