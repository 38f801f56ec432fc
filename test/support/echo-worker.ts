import type { ConsumerConfig, Kafka } from 'kafkajs';
import { decodeEnvelope, encodeEnvelope, Envelopes, newId, type Envelope, type TaskRunCommand, type TopicNames } from '@mesh/contract';

/** A test worker consuming one agent's command channel. */
export interface EchoWorker {
  /** Every command received, in order (duplicates included). */
  commands: Envelope[];
  stop(): Promise<void>;
}

/**
 * Echo worker for tests. By the text it receives:
 * - `need-input…`: asks for input (INPUT_REQUIRED) on the first turn, echoes on later turns;
 * - `no-artifact`: reports COMPLETED without producing an artifact;
 * - `silent`: never answers;
 * - anything else: WORKING, an artifact `echo: <text>`, COMPLETED.
 */
export async function startEchoWorker(
  kafka: Kafka,
  topics: TopicNames,
  agentId: string,
  partitions = 2,
  consumerConfig: Partial<ConsumerConfig> = {},
): Promise<EchoWorker> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: topics.commands(agentId), numPartitions: partitions }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const consumer = kafka.consumer({ groupId: `${topics.prefix}echo-${agentId}-${newId()}`, maxWaitTimeInMs: 50, ...consumerConfig });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.commands(agentId), fromBeginning: true });
  const commands: Envelope[] = [];
  await consumer.run({
    partitionsConsumedConcurrently: partitions,
    eachMessage: async ({ message }) => {
      const env = decodeEnvelope({ headers: message.headers, value: message.value });
      commands.push(env);
      if (env.kind !== 'task.run') return;
      const events = respond(env);
      if (events.length === 0) return;
      await producer.send({
        topic: topics.events(),
        acks: -1,
        messages: events.map((e) => {
          const w = encodeEnvelope(e);
          return { key: e.identity.taskId, value: w.value, headers: w.headers };
        }),
      });
    },
  });
  return {
    commands,
    async stop() {
      await consumer.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
    },
  };
}

function respond(cmd: TaskRunCommand): Envelope[] {
  const id = cmd.identity;
  const text = ((cmd.body.message.parts as Array<{ text?: string }>) ?? []).map((p) => p.text ?? '').join('');
  if (text === 'silent') return [];
  const working = Envelopes.status(id, { seq: 0, state: 'TASK_STATE_WORKING', final: false });
  if (text.startsWith('need-input') && cmd.body.turn === 1) {
    const ask = { messageId: newId(), role: 'ROLE_AGENT', parts: [{ text: 'which colour?' }] };
    return [working, Envelopes.status(id, { seq: 1, state: 'TASK_STATE_INPUT_REQUIRED', message: ask, final: true })];
  }
  if (text === 'no-artifact') return [working, Envelopes.status(id, { seq: 1, state: 'TASK_STATE_COMPLETED', final: true })];
  return [
    working,
    Envelopes.artifact(id, {
      seq: 1,
      artifact: { artifactId: newId(), name: 'echo', parts: [{ text: `echo: ${text}` }] },
      lastChunk: true,
    }),
    Envelopes.status(id, { seq: 2, state: 'TASK_STATE_COMPLETED', final: true }),
  ];
}
