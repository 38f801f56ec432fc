import { decodeEnvelope, newId } from '@mesh/contract';
import { IntervalCommitter, runSupervised, type Admin, type Consumer, type Kafka } from '@mesh/bus';
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
  private consumer?: Consumer;
  private committer?: IntervalCommitter;
  private admin?: Admin;
  private readonly groupId: string;
  private resting = false;
  /** Whether someone here follows a task (the manager says so through wake/idle). */
  private wanted = false;
  /** Set by `stop`: a crash from then on is the shutdown's, not one to recover from. */
  private stopped = false;
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
    this.groupId = opts.groupName(newId());
    this.log = (opts.logger ?? silentLogger).child({ src: 'event-fanout' });
  }

  /** Resolves once the group has joined; the fan-out then rests until the first follower. */
  async start(): Promise<void> {
    const consumer = this.kafka.consumer({ groupId: this.groupId, maxWaitTimeInMs: 50, sessionTimeout: 10000, heartbeatInterval: 1000 });
    this.consumer = consumer;
    this.admin = this.kafka.admin();
    await Promise.all([consumer.connect(), this.admin.connect()]);
    await consumer.subscribe({ topic: this.topic, fromBeginning: false });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    // Commits (every 5 s, not per fetched batch) let a consumer that rejoins after a broker outage
    // resume where it was instead of at the end of the topic.
    const committer = new IntervalCommitter(consumer, 5000);
    this.committer = committer;
    await runSupervised(
      consumer,
      {
        autoCommit: false,
        eachMessage: async ({ topic, partition, message }) => {
          committer.processed(topic, partition, message.offset);
          // Events are keyed by task id (the contract): most are of tasks nobody here follows.
          const taskId = message.key ? message.key.toString() : taskIdOf(message, this.log);
          if (taskId !== undefined && this.signals.isFollowed(taskId)) this.signals.signal(taskId);
        },
      },
      { stopping: () => this.stopped, report: (err, what) => this.log.error({ err: String(err) }, what) },
    );
    await joined;
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
    if (this.wanted || this.resting || this.waking || !this.consumer) return;
    this.consumer.pause([{ topic: this.topic }]);
    this.resting = true;
  }

  private async resume(): Promise<void> {
    const consumer = this.consumer!;
    try {
      for (const { partition, offset } of await this.storedFrontier()) consumer.seek({ topic: this.topic, partition, offset });
    } catch (err) {
      // Reading on from where it rested misses only events that were not stored when it rested.
      this.log.warn({ err: String(err) }, 'cannot read the projector offsets; the fan-out reads on from where it rested');
    }
    consumer.resume([{ topic: this.topic }]);
    this.resting = false;
    if (!this.wanted) this.idle();
  }

  /** Per partition, the projector group's committed offset (the low watermark where it has none). */
  private async storedFrontier(): Promise<Array<{ partition: number; offset: string }>> {
    const admin = this.admin!;
    const [committed] = await admin.fetchOffsets({ groupId: this.opts.projectorGroup, topics: [this.topic] });
    const partitions = committed?.partitions ?? [];
    const low = partitions.some((p) => BigInt(p.offset) < 0n)
      ? new Map((await admin.fetchTopicOffsets(this.topic)).map((o) => [o.partition, o.low]))
      : undefined;
    return partitions.map((p) => ({ partition: p.partition, offset: BigInt(p.offset) >= 0n ? p.offset : (low?.get(p.partition) ?? '0') }));
  }

  onApplicationBootstrap(): Promise<void> {
    return this.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.idleTimer);
    if (!this.consumer) return;
    await this.committer?.stop();
    await this.consumer.disconnect().catch(() => undefined);
    // The group is this process's alone: leave nothing behind on the broker.
    await this.admin?.deleteGroups([this.groupId]).catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
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
