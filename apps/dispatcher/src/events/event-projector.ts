import type { Kafka } from 'kafkajs';
import { AgentEvent } from '@a2a-js/sdk/server';
import { Artifact, TaskStatus } from '@a2a-js/sdk';
import { decodeEnvelope, type TaskEvent } from '@mesh/contract';
import type { TaskService } from '../tasks/task.service.js';
import { ensureTopic, runConsumer, type RunningConsumer } from '../kafka/kafka.adapter.js';
import type { TaskEventBusManager } from './task-event-bus.manager.js';

const log = (level: string, msg: string, extra: Record<string, unknown> = {}) =>
  process.stderr.write(`${JSON.stringify({ level, src: 'event-projector', msg, ...extra })}\n`);

/**
 * Consumes the agents' event topic (key: task id, so one task's events stay ordered on one
 * partition) and projects each event into the task store, then tells local listeners. A failed
 * write throws, so kafkajs does not commit and the event is read again.
 */
export class EventProjector {
  private consumer?: RunningConsumer;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly groupId: string,
    private readonly tasks: TaskService,
    private readonly buses: TaskEventBusManager,
    private readonly partitions: number,
  ) {}

  async start(): Promise<void> {
    await ensureTopic(this.kafka, this.topic, this.partitions);
    this.consumer = await runConsumer(
      this.kafka,
      { groupId: this.groupId, topic: this.topic, fromBeginning: true, partitionsConsumedConcurrently: this.partitions },
      async ({ message }) => {
        let env;
        try {
          env = decodeEnvelope({ headers: message.headers, value: message.value });
        } catch (err) {
          log('warn', 'skipped undecodable event', { offset: message.offset, err: String(err) });
          return;
        }
        if (env.kind !== 'task.status' && env.kind !== 'task.artifact') {
          log('warn', 'skipped a command on the event topic', { kind: env.kind });
          return;
        }
        await this.project(env);
      },
    );
  }

  /** Projects one event and publishes the committed change to this process's listeners. */
  async project(env: TaskEvent): Promise<void> {
    const outcome = await this.tasks.applyEvent(env);
    if (!outcome.applied) return;
    const ev = outcome.event;
    const taskId = outcome.task.id;
    const contextId = outcome.task.contextId;
    if (ev.kind === 'task.status') {
      this.buses.publish(
        taskId,
        AgentEvent.statusUpdate({ taskId, contextId, status: outcome.task.status ?? TaskStatus.fromJSON({}), metadata: undefined }),
      );
    } else {
      this.buses.publish(
        taskId,
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: Artifact.fromJSON(ev.body.artifact),
          append: ev.body.append ?? false,
          lastChunk: ev.body.lastChunk ?? false,
          metadata: undefined,
        }),
      );
    }
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
