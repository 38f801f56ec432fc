import type { Kafka } from 'kafkajs';
import {
  decodeEnvelope,
  encodeEnvelope,
  Envelopes,
  newId,
  type Envelope,
  type TaskRunCommand,
  type TaskState,
  type TopicNames,
} from '@mesh/contract';

/** A task state without its `TASK_STATE_` prefix (`WORKING`, `INPUT_REQUIRED` …). */
type StateSuffix = TaskState extends `TASK_STATE_${infer S}` ? S : never;
import { eventually } from './infra.js';

/** A worker the test drives by hand: it records commands, the test decides which events to send. */
export interface ManualWorker {
  commands: Envelope[];
  /** The run command of a task, once received. */
  run(taskId: string): Promise<TaskRunCommand>;
  /** Produces events for the task's run (status names like `WORKING`, or an artifact text). */
  emit(cmd: TaskRunCommand, events: Array<{ seq: number; state?: StateSuffix; artifact?: string; message?: string }>): Promise<void>;
  stop(): Promise<void>;
}

export async function startManualWorker(kafka: Kafka, topics: TopicNames, agentId: string): Promise<ManualWorker> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: topics.commands(agentId), numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const consumer = kafka.consumer({ groupId: `${topics.prefix}manual-${agentId}-${newId()}`, maxWaitTimeInMs: 50 });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.commands(agentId), fromBeginning: true });
  const commands: Envelope[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => void commands.push(decodeEnvelope({ headers: message.headers, value: message.value })),
  });
  return {
    commands,
    async run(taskId) {
      return eventually(`run command of ${taskId}`, () =>
        commands.find((c): c is TaskRunCommand => c.kind === 'task.run' && c.identity.taskId === taskId),
      );
    },
    async emit(cmd, events) {
      await producer.send({
        topic: topics.events(),
        acks: -1,
        messages: events.map((e) => {
          const env = e.artifact
            ? Envelopes.artifact(cmd.identity, {
                seq: e.seq,
                artifact: { artifactId: newId(), name: 'out', parts: [{ text: e.artifact }] },
                lastChunk: true,
              })
            : Envelopes.status(cmd.identity, {
                seq: e.seq,
                state: `TASK_STATE_${e.state ?? 'WORKING'}`,
                final: false,
                ...(e.message ? { message: { messageId: newId(), role: 'ROLE_AGENT', parts: [{ text: e.message }] } } : {}),
              });
          const w = encodeEnvelope(env);
          return { key: cmd.identity.taskId, value: w.value, headers: w.headers };
        }),
      });
    },
    async stop() {
      await consumer.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
    },
  };
}
