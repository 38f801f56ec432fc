import type { Kafka } from 'kafkajs';
import {
  ConsumerGroups,
  decodeEnvelope,
  encodeEnvelope,
  Envelopes,
  newId,
  TaskStates,
  TopicDefinitions,
  type AgentRecord,
  type Envelope,
  type Identity,
  type JsonObject,
  type TopicNames,
} from '@mesh/contract';
import { ensureTopics, IntervalCommitter } from '@mesh/bus';

// The echo-agent that bench:dispatch measures the dispatcher against (bench/dispatch-worker.mjs
// imports the built copy) and test/dispatcher/demo checks: a public record and a minimal worker
// that answers each command at once, one produce per fetched batch.

/** Id of the demo agent. */
export const DEMO_AGENT_ID = 'echo-agent';

/** The demo agent's directory record: public, default channel key. */
export function demoAgentRecord(): AgentRecord {
  return {
    id: DEMO_AGENT_ID,
    tenant: 'acme',
    visibility: 'public',
    version: 1,
    card: {
      name: 'Echo Agent',
      description: 'Answers every message with an artifact holding the same text.',
      version: '1.0.0',
      supportedInterfaces: [],
      capabilities: {},
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the text it receives.', tags: ['demo'] }],
    },
    channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 3 },
    retired: false,
    updatedAt: new Date(0).toISOString(),
  };
}

/** Publishes the demo record to the cards topic (what the directory does for registered agents). */
export async function registerDemoAgent(kafka: Kafka, topics: TopicNames): Promise<void> {
  // Standing in for the directory, the owner of these topics (a dispatcher waits for the first two;
  // the agent's command topic is created when it registers).
  const record = demoAgentRecord();
  const definitions = new TopicDefinitions(topics);
  await ensureTopics(kafka, [definitions.cards(), definitions.heartbeats(), definitions.commands(record.id, record.channel.partitions)]);
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic: topics.cards(), messages: [{ key: record.id, value: JSON.stringify(record) }] });
  } finally {
    await producer.disconnect();
  }
}

/**
 * A minimal worker for the demo agent: each `task.run` gets an artifact with the text it
 * received, then COMPLETED; it heartbeats so admission control sees a healthy worker.
 */
export async function startDemoEchoWorker(kafka: Kafka, topics: TopicNames): Promise<{ stop(): Promise<void> }> {
  await ensureTopics(kafka, [new TopicDefinitions(topics).commands(DEMO_AGENT_ID, demoAgentRecord().channel.partitions)]);
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  // The agent's workers' group, as the agents runtime's: admission requires a member in it.
  const consumer = kafka.consumer({ groupId: new ConsumerGroups(topics.prefix).agentWorkers(DEMO_AGENT_ID), maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.commands(DEMO_AGENT_ID), fromBeginning: true });
  const committer = new IntervalCommitter(consumer, 1000);
  // One produce per fetched batch: the events of every command in it go out together.
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 3,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      const out: Array<{ key: string; value: Buffer; headers: Record<string, string> }> = [];
      for (const message of batch.messages) {
        let env;
        try {
          env = decodeEnvelope({ headers: message.headers, value: message.value });
        } catch {
          continue; // the demo worker skips what it cannot read
        }
        if (env.kind !== 'task.run') continue;
        for (const e of echo(env.identity, env.body.message)) {
          const w = encodeEnvelope(e);
          out.push({ key: env.identity.taskId, value: w.value, headers: w.headers });
        }
      }
      if (out.length > 0) await producer.send({ topic: topics.events(), acks: -1, messages: out });
      const last = batch.messages[batch.messages.length - 1];
      if (last) {
        resolveOffset(last.offset);
        committer.processed(batch.topic, batch.partition, last.offset);
      }
      await heartbeat();
    },
  });
  // Heartbeats, so the dispatcher's admission control sees a healthy worker.
  const beat = () =>
    producer
      .send({
        topic: topics.heartbeats(),
        messages: [
          {
            key: DEMO_AGENT_ID,
            value: JSON.stringify({ agentId: DEMO_AGENT_ID, workerId: 'demo-echo', atUnixMs: Date.now(), ttlMs: 30_000 }),
          },
        ],
      })
      .catch(() => undefined);
  await beat();
  const beating = setInterval(() => void beat(), 10_000);
  return {
    async stop() {
      clearInterval(beating);
      await committer.stop();
      await consumer.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
    },
  };
}

/** An artifact with the text received, then COMPLETED (the answer is immediate: no WORKING). */
function echo(identity: Identity, message: JsonObject): Envelope[] {
  const parts = (message.parts as Array<{ text?: string }> | undefined) ?? [];
  const text = parts.map((p) => p.text ?? '').join('');
  return [
    Envelopes.artifact(identity, { seq: 0, artifact: { artifactId: newId(), name: 'echo', parts: [{ text }] }, lastChunk: true }),
    Envelopes.status(identity, { seq: 1, state: TaskStates.completed, final: true }),
  ];
}
