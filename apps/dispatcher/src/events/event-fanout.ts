import { decodeEnvelope } from '@mesh/contract';
import { TopicReader, type Kafka } from '@mesh/bus';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { EventFeed } from '../tasks/task-change-notifier.js';

/** Who the fan-out tells that a task's events are on their way (TaskChangeNotifier). */
export interface TaskSignals {
  /** Whether the task is followed here: events of other tasks are skipped unread. */
  isFollowed(taskId: string): boolean;
  /** An event of the task is on the topic: it will be logged soon, here or on another replica. */
  signal(taskId: string): void;
}

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
 * process, deleted on stop) and signals each event's task id to the local followers ("events of
 * task X are on their way": they read the task's log sooner), so a stream can be served by any
 * replica whichever one accepted the task or projects its events. What streams show comes from
 * the log, never from here: an event is not decoded. Nothing here writes: the projector (one
 * shared group) stays the only writer.
 *
 * It reads only while a task is followed here (a stream or a subscription): otherwise it rests
 * (the partitions are paused), since fetching every event of the topic on every replica for nobody
 * costs each replica as much as the projection's own fetches. Waking, it seeks to the projector's
 * committed offsets: every event below them is stored, so a follower that reads its snapshot after
 * `wake()` resolved misses no signal (a repeated one only hurries a read).
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
    private readonly signals: TaskSignals,
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
          const taskId = message.key ? message.key.toString() : taskIdOf(message, this.log);
          if (taskId !== undefined && this.signals.isFollowed(taskId)) this.signals.signal(taskId);
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

/** The task id of a record without a key (the contract keys events by task id): from its envelope. */
function taskIdOf(
  message: { headers?: Parameters<typeof decodeEnvelope>[0]['headers']; value: Buffer | null },
  log: Logger,
): string | undefined {
  try {
    return decodeEnvelope({ headers: message.headers, value: message.value }).identity.taskId;
  } catch (err) {
    log.warn({ err: String(err) }, 'undecodable event skipped');
    return undefined;
  }
}
