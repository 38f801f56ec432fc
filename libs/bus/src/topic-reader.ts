import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, ConsumerConfig, Kafka, KafkaMessage } from 'kafkajs';
import { sleep } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { runSupervised } from './consumer-supervisor.js';
import { IntervalCommitter } from './interval-committer.js';

/** One record as a reader hands it over. */
export interface TopicRecord {
  topic: string;
  partition: number;
  message: KafkaMessage;
}

/** The records of one partition fetched together. */
export interface TopicBatch {
  topic: string;
  partition: number;
  messages: KafkaMessage[];
}

/** How a reader hands records over: one at a time, or a fetched batch per call. */
export type TopicReaderHandler = { eachMessage(record: TopicRecord): Promise<void> } | { eachBatch(batch: TopicBatch): Promise<void> };

export interface TopicReaderOptions {
  topic: string;
  /**
   * A group id shared by the service's replicas (each record is read by one of them), or a name for
   * a fresh replica id: every replica then reads the whole topic under a group of its own, which
   * the reader deletes when it stops.
   */
  group: string | ((replicaId: string) => string);
  /** Where a group without committed offsets starts (default false: at the end). */
  fromBeginning?: boolean;
  /**
   * What is committed: `none` (a per-replica reader that starts over each time), `per-batch`
   * (kafkajs commits after every fetched batch), or `{ everyMs }` (an {@link IntervalCommitter}:
   * one commit per partition every `everyMs`).
   */
  commits: 'none' | 'per-batch' | { everyMs: number };
  /** kafkajs consumer settings (`maxWaitTimeInMs`, `sessionTimeout`, `heartbeatInterval`…). */
  consumerConfig?: Omit<ConsumerConfig, 'groupId'>;
  /** Called after every completed fetch, records or not (a reader that must know it can hear). */
  onFetch?(): void;
  /** Where crashes and restarts of the consumer are reported (at error level). */
  logger?: Logger;
}

/**
 * A plain supervised reader of one topic for the long-lived readers that are not `BusConsumer`
 * (no envelopes, no per-key scheduling): the dispatcher's event fan-out and agent catalog, the
 * directory's heartbeat consumer. It owns the kafkajs mechanics — connect, subscribe,
 * `runSupervised`, commits, pause/resume/seek, a per-replica group's creation and deletion — so
 * the services deal in records only.
 */
export class TopicReader {
  readonly groupId: string;
  /** Whether the group is this process's alone (deleted on stop). */
  private readonly perReplica: boolean;
  private readonly consumer: Consumer;
  private readonly log: Logger;
  private committer?: IntervalCommitter;
  private admin?: Admin;
  private adminConnected?: Promise<void>;
  private joinedOnce?: Promise<void>;
  private started = false;
  private stopped = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly opts: TopicReaderOptions,
  ) {
    this.perReplica = typeof opts.group === 'function';
    this.groupId = typeof opts.group === 'function' ? opts.group(randomUUID()) : opts.group;
    this.consumer = kafka.consumer({ ...opts.consumerConfig, groupId: this.groupId });
    this.log = opts.logger ?? silentLogger;
  }

  get topic(): string {
    return this.opts.topic;
  }

  /**
   * Joins and starts handing records over. `until`: `running` (default) resolves once the consumer
   * runs, `joined` once the group was joined, `caught-up` once every partition was read up to its
   * end offset at start (a cache that must hold the topic's history before it answers).
   */
  async start(handler: TopicReaderHandler, until: 'running' | 'joined' | 'caught-up' = 'running'): Promise<void> {
    if (this.started) throw new Error(`the reader of ${this.opts.topic} was started already`);
    this.started = true;
    const { topic } = this.opts;
    const caughtUp = until === 'caught-up' ? await this.caughtUp() : undefined;
    const consumer = this.consumer;
    this.joinedOnce = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    if (this.opts.onFetch) consumer.on(consumer.events.FETCH, () => this.opts.onFetch!());
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: this.opts.fromBeginning ?? false });
    const { commits } = this.opts;
    const committer = typeof commits === 'object' ? new IntervalCommitter(consumer, commits.everyMs) : undefined;
    this.committer = committer;
    const done = (partition: number, offset: string) => {
      committer?.processed(topic, partition, offset);
      caughtUp?.seen(partition, offset);
    };
    const autoCommit = commits === 'per-batch';
    const config =
      'eachMessage' in handler
        ? {
            autoCommit,
            eachMessage: async ({ partition, message }: { partition: number; message: KafkaMessage }) => {
              await handler.eachMessage({ topic, partition, message });
              done(partition, message.offset);
            },
          }
        : {
            autoCommit,
            eachBatchAutoResolve: true,
            eachBatch: async ({ batch }: { batch: { partition: number; messages: KafkaMessage[] } }) => {
              await handler.eachBatch({ topic, partition: batch.partition, messages: batch.messages });
              const last = batch.messages.at(-1);
              if (last) done(batch.partition, last.offset);
            },
          };
    await runSupervised(consumer, config, {
      stopping: () => this.stopped,
      report: (err, what) => this.log.error({ err: String(err) }, what),
    });
    if (until === 'joined') await this.joinedOnce;
    if (caughtUp) await caughtUp.done;
  }

  /** Resolves once the group was joined for the first time. */
  joined(): Promise<void> {
    if (!this.joinedOnce) return Promise.reject(new Error(`the reader of ${this.opts.topic} was not started`));
    return this.joinedOnce;
  }

  /** Commits what was handled (interval commits), leaves the group, and deletes a per-replica group. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.committer?.stop();
    await this.consumer.disconnect().catch(() => undefined);
    // The group is this process's alone: leave nothing behind on the broker.
    if (this.perReplica && this.started)
      await (await this.adminClient().catch(() => undefined))?.deleteGroups([this.groupId]).catch(() => undefined);
    if (this.adminConnected) await this.admin?.disconnect().catch(() => undefined);
  }

  private async adminClient(): Promise<Admin> {
    this.admin ??= this.kafka.admin();
    this.adminConnected ??= this.admin.connect().catch((err: unknown) => {
      this.adminConnected = undefined;
      throw err;
    });
    await this.adminConnected;
    return this.admin;
  }

  /** The topic's end offsets now, and a promise that resolves once the reader has handled up to them. */
  private async caughtUp(): Promise<CaughtUp> {
    const offsets = await endOffsets(await this.adminClient(), this.opts.topic);
    const targets = new Map(offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high)]));
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    if (targets.size === 0) resolve();
    return {
      done,
      seen(partition, offset) {
        const target = targets.get(partition);
        if (target === undefined || BigInt(offset) + 1n < target) return;
        targets.delete(partition);
        if (targets.size === 0) resolve();
      },
    };
  }
}

/** Resolves `done` once every partition of a topic was read up to its end offset at creation. */
interface CaughtUp {
  done: Promise<void>;
  seen(partition: number, offset: string): void;
}

/**
 * The topic's offsets, retrying what the broker calls retriable for up to 30 s: a topic another
 * service has just created can have leaders in the metadata and still answer ListOffsets with
 * NOT_LEADER_FOR_PARTITION for a moment.
 */
export async function endOffsets(admin: Admin, topic: string): Promise<Awaited<ReturnType<Admin['fetchTopicOffsets']>>> {
  const until = Date.now() + 30_000;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (err) {
      if (!(err as { retriable?: boolean }).retriable || Date.now() > until) throw err;
      await sleep(delay);
    }
  }
}
