import type { Kafka } from 'kafkajs';
import { BusAdmin, BusConsumer } from '@mesh/bus';
import type { TaskEvent } from '@mesh/contract';
import type { TaskProjection } from '../tasks/task-projection.js';
import type { TaskEventBusManager } from './task-event-bus.manager.js';
import type { PushService } from '../push/push.service.js';

const log = (level: string, msg: string, extra: Record<string, unknown> = {}) =>
  process.stderr.write(`${JSON.stringify({ level, src: 'event-projector', msg, ...extra })}\n`);

/**
 * Consumes the agents' event topic (key: task id) with the bus's keyed consumer: events of one
 * task are applied one at a time in offset order, different tasks in parallel; the committed
 * offset never passes an unfinished event. Each event is projected into the task store, then
 * local blocking sends are woken (streams are fed by EventFanout on every replica). A failed write is retried by the consumer (then dead-lettered);
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
    private readonly push?: PushService,
  ) {}

  async start(): Promise<void> {
    const admin = new BusAdmin(this.kafka);
    await admin.ensureTopic(this.topic, { partitions: this.partitions }).finally(() => admin.close());
    this.consumer = new BusConsumer(this.kafka, {
      groupId: this.groupId,
      topics: [this.topic],
      fromBeginning: true,
      // Many tasks' events in flight at once: their projection statements share batches.
      maxInFlight: 256,
      commitIntervalMs: 200,
      // A dead replica's partitions move to the others after 10 s, not kafkajs's default 30 s.
      consumerConfig: { maxWaitTimeInMs: 100, sessionTimeout: 10000, heartbeatInterval: 1000 },
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

  /** Projects one event and wakes this process's blocking sends waiting on the task. */
  async project(env: TaskEvent): Promise<void> {
    const outcome = await this.tasks.applyEvent(env);
    if (!outcome.applied) {
      // A re-consumed event (e.g. after a crash between projection and recording its pushes):
      // recording is idempotent per event id, so nothing is lost and nothing doubles.
      if (outcome.reason === 'duplicate') await this.push?.enqueueEvent(env);
      return;
    }
    this.buses.notifyCommitted(outcome.task);
    // Its push deliveries were recorded with the change: wake the delivery loop.
    if (outcome.deliveries > 0) this.push?.kick();
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
