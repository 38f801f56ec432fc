import type { Kafka } from 'kafkajs';
import { AgentEvent } from '@a2a-js/sdk/server';
import { Artifact, TaskStatus } from '@a2a-js/sdk';
import { BusAdmin, BusConsumer } from '@mesh/bus';
import type { TaskEvent } from '@mesh/contract';
import type { TaskProjection } from '../tasks/task-projection.js';
import type { TaskEventBusManager } from './task-event-bus.manager.js';

const log = (level: string, msg: string, extra: Record<string, unknown> = {}) =>
  process.stderr.write(`${JSON.stringify({ level, src: 'event-projector', msg, ...extra })}\n`);

/**
 * Consumes the agents' event topic (key: task id) with the bus's keyed consumer: events of one
 * task are applied one at a time in offset order, different tasks in parallel; the committed
 * offset never passes an unfinished event. Each event is projected into the task store, then
 * local listeners hear of it. A failed write is retried by the consumer (then dead-lettered);
 * undecodable records go to the dead-letter topic without reaching the handler.
 */
export class EventProjector {
  private consumer?: BusConsumer;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly groupId: string,
    private readonly tasks: TaskProjection,
    private readonly buses: TaskEventBusManager,
    private readonly partitions: number,
  ) {}

  async start(): Promise<void> {
    const admin = new BusAdmin(this.kafka);
    await admin.ensureTopic(this.topic, { partitions: this.partitions }).finally(() => admin.close());
    this.consumer = new BusConsumer(this.kafka, {
      groupId: this.groupId,
      topics: [this.topic],
      fromBeginning: true,
      maxInFlight: 32,
      commitIntervalMs: 200,
      consumerConfig: { maxWaitTimeInMs: 100 },
      onError: (err, what) => log('warn', what, { err: String(err) }),
    });
    await this.consumer.start(async (env, ctx) => {
      if (env.kind !== 'task.status' && env.kind !== 'task.artifact') {
        log('warn', 'skipped a command on the event topic', { kind: env.kind });
        return;
      }
      try {
        await this.project(env);
      } catch (err) {
        // The consumer retries (then dead-letters); say why, once per attempt.
        log('warn', 'projecting an event failed', { taskId: env.identity.taskId, attempt: ctx.attempt, err: String(err) });
        throw err;
      }
    });
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
