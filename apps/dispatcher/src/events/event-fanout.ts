import { AgentEvent } from '@a2a-js/sdk/server';
import { TaskStatus } from '@a2a-js/sdk';
import { decodeEnvelope, type TaskEvent } from '@mesh/contract';
import { TopicReader, type Kafka } from '@mesh/bus';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { streamUpdateOf } from '../tasks/task-projection.js';
import type { EventFeed, TaskEventBusManager } from './task-event-bus.manager.js';

export interface EventFanoutOptions {
  /** The events topic. */
  topic: string;
  /** This replica's group name for a fresh replica id (`ConsumerGroups.dispatcherFanout`). */
  groupName: (replicaId: string) => string;
  /** The projector's consumer group: its committed offsets mark what is stored. */
  projectorGroup: string;
  /** How long the fan-out goes on reading after the last follower here left. */
  idleMs: number;
  /** The service's logger (lines carry `src: event-fanout`). */
  logger?: Logger;
}

/**
 * Every replica reads the whole events topic under a consumer group of its own (a fresh id per
 * process, deleted on stop) and hands each event to the local buses, so a stream can be served by
 * any replica whichever one accepted the task or projects its events. Nothing here writes: the
 * projector (one shared group) stays the only writer.
 *
 * It reads only while a task is followed here (a stream or a subscription): otherwise it rests
 * (the partitions are paused), since decoding every event of the topic on every replica for nobody
 * costs each replica as much as the projection's own fetches. Waking, it seeks to the projector's
 * committed offsets: every event below them is stored, so a follower that reads its snapshot after
 * `wake()` resolved misses nothing (it may see an event twice; streams drop what they have shown).
 */
export class EventFanout implements EventFeed, OnApplicationBootstrap, OnApplicationShutdown {
  private reader?: TopicReader;
  private resting = false;
  /** Whether someone here follows a task (the manager says so through wake/idle). */
  private wanted = false;
  private waking?: Promise<void>;
  private idleTimer?: NodeJS.Timeout;
  private readonly log: Logger;

  private readonly topic: string;

  constructor(
    private readonly kafka: Kafka,
    private readonly buses: TaskEventBusManager,
    private readonly opts: EventFanoutOptions,
  ) {
    this.topic = opts.topic;
    this.log = (opts.logger ?? silentLogger).child({ src: 'event-fanout' });
  }

  /** Resolves once the group has joined; the fan-out then rests until the first follower. */
  async start(): Promise<void> {
    const reader = new TopicReader(this.kafka, {
      topic: this.topic,
      // A group of this replica's own (deleted on stop): every replica reads the whole topic.
      group: this.opts.groupName,
      // Commits (every 5 s, not per fetched batch) let a consumer that rejoins after a broker outage
      // resume where it was instead of at the end of the topic.
      commits: { everyMs: 5000 },
      consumerConfig: { maxWaitTimeInMs: 50, sessionTimeout: 10000, heartbeatInterval: 1000 },
      logger: this.log,
    });
    this.reader = reader;
    await reader.start(
      {
        eachMessage: async ({ message }) => {
          // Events are keyed by task id (the contract): most are of tasks nobody here follows.
          if (message.key && !this.buses.isFollowed(message.key.toString())) return;
          let env;
          try {
            env = decodeEnvelope({ headers: message.headers, value: message.value });
          } catch (err) {
            this.log.warn({ err: String(err) }, 'undecodable event skipped');
            return;
          }
          if (env.kind !== 'task.status' && env.kind !== 'task.artifact') return;
          const event = toAgentEvent(env);
          if (event) this.buses.publishRaw(env.identity.taskId, event, env);
        },
      },
      'joined',
    );
    if (!this.wanted) this.rest();
  }

  /** Someone here follows a task: reading from what is not stored yet on, before this resolves. Never rejects. */
  wake(): Promise<void> {
    this.wanted = true;
    clearTimeout(this.idleTimer);
    if (this.waking) return this.waking;
    if (!this.resting) return Promise.resolve();
    this.waking = this.resume().finally(() => {
      this.waking = undefined;
    });
    return this.waking;
  }

  /** Nobody here follows a task any more: rest after the idle time unless someone comes back. */
  idle(): void {
    this.wanted = false;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.rest(), this.opts.idleMs);
    this.idleTimer.unref();
  }

  private rest(): void {
    if (this.wanted || this.resting || this.waking || !this.reader) return;
    this.reader.pause();
    this.resting = true;
  }

  private async resume(): Promise<void> {
    const reader = this.reader!;
    try {
      // Every event below the projector's committed offsets is stored (the low watermark where it has none).
      await reader.seekToCommitted(this.opts.projectorGroup);
    } catch (err) {
      // Reading on from where it rested misses only events that were not stored when it rested.
      this.log.warn({ err: String(err) }, 'cannot read the projector offsets; the fan-out reads on from where it rested');
    }
    reader.resume();
    this.resting = false;
    if (!this.wanted) this.idle();
  }

  onApplicationBootstrap(): Promise<void> {
    return this.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    clearTimeout(this.idleTimer);
    // Commits what was read, leaves the group and deletes it (it is this replica's alone).
    await this.reader?.stop();
  }
}

/** A worker event as the A2A stream event it becomes (before projection). */
export function toAgentEvent(env: TaskEvent) {
  const update = streamUpdateOf(env, env.kind === 'task.status' ? reportedStatus(env) : undefined);
  return update.$case === 'statusUpdate' ? AgentEvent.statusUpdate(update.value) : AgentEvent.artifactUpdate(update.value);
}

/** A status event's status as its worker reported it (before projection), stamped now. */
export function reportedStatus(env: Extract<TaskEvent, { kind: 'task.status' }>): TaskStatus {
  const { taskId, contextId } = env.identity;
  return TaskStatus.fromJSON({
    state: env.body.state,
    timestamp: new Date().toISOString(),
    ...(env.body.message ? { message: { ...env.body.message, taskId, contextId } } : {}),
  });
}
