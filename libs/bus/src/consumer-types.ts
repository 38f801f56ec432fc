import type { Envelope, TopicDefinitions, TransientErrorTest } from '@mesh/contract';
import type { ConsumerConfig } from 'kafkajs';
import type { BusProducerOptions } from './bus-producer.js';

/** What a handler learns about the record besides the envelope. */
export interface MessageContext {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  /** 1 on the first delivery to the handler, 2 on the first retry, … */
  attempt: number;
  /**
   * Aborted when the partition is revoked or the consumer stops and the drain timeout passed. A
   * handler that returns after it was aborted counts as not finished: the record is delivered again.
   */
  signal: AbortSignal;
  /** The record's headers as strings. */
  headers: Record<string, string>;
}

/** Handles one envelope; a rejection is retried or dead-lettered (see {@link BusConsumerOptions.retry}). */
export type EnvelopeHandler = (envelope: Envelope, ctx: MessageContext) => Promise<void>;

/** One record handed to a {@link KeyedBatchHandler}. */
export interface KeyedRecord {
  envelope: Envelope;
  ctx: MessageContext;
}

/**
 * Handles consecutive records of ONE ordering key at once, in offset order (see
 * `BusConsumer.startBatches`); they complete together. A rejection makes the consumer hand them
 * over again one at a time, each with its own retries and dead-lettering, so the handler must
 * tolerate seeing a record again (as every handler must after a crash).
 */
export type KeyedBatchHandler = (records: readonly KeyedRecord[]) => Promise<void>;

/** Retry policy of failed handlers: exponential backoff with jitter, then the dead-letter topic. */
export interface RetryOptions {
  /** Failed handler calls before dead-lettering (default 5); transient infrastructure failures do not count. */
  maxAttempts?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/** Options of {@link BusConsumer}. */
export interface BusConsumerOptions {
  groupId: string;
  topics: string[];
  /** Told this member's partitions, by topic, each time the group is joined (every rebalance). */
  onAssigned?: (assignment: Readonly<Record<string, number[]>>) => void;
  /** Handlers running at once over all partitions (default 64). */
  maxInFlight?: number;
  /** Received messages not yet started; above it partitions are paused (default max(4 × maxInFlight, 1024)). */
  maxBuffered?: number;
  /** Handlers of one tenant running at once (default: no limit besides maxInFlight). */
  perTenantInFlight?: number;
  /**
   * Records that never wait for their tenant's slots (they still take one of maxInFlight): work
   * that must get past the tenant's own queued records, as a cancel must reach the run it cancels.
   */
  outsideTenantLimit?: (e: Envelope) => boolean;
  /** Messages with the same ordering key run one at a time in offset order (default: the task id). */
  orderingKey?: (e: Envelope) => string;
  /** With `startBatches`: at most this many queued records of one ordering key handed over at once (default 16). */
  maxBatchPerKey?: number;
  retry?: RetryOptions;
  /**
   * Failures of a briefly unreachable dependency: retried without counting towards dead-lettering
   * (default: Kafka's; a handler that writes to Postgres adds `@mesh/database`'s).
   */
  isTransient?: TransientErrorTest;
  /** How long stop() and a revocation wait for running handlers before aborting them (default 10 s). */
  drainTimeoutMs?: number;
  /** Where a group without committed offsets starts (default false: only new records). */
  fromBeginning?: boolean;
  /** How often finished offsets are committed (default 500 ms). */
  commitIntervalMs?: number;
  /**
   * Longest commit metadata (default 4000; Kafka's `offset.metadata.max.bytes` is 4096): the
   * offsets finished above the committed one travel with each commit, so the next owner of the
   * partition skips them instead of running them again. 0: no metadata written or read.
   */
  commitMetadataMaxChars?: number;
  /** Create each source topic's dead-letter topic at start (default true; its partition count: 1). */
  ensureDeadLetterTopics?: boolean;
  /** How dead-letter topics are created (the deployment's replication factor; default: the broker's). */
  topicDefinitions?: TopicDefinitions;
  /** Options of the producer that writes dead letters. */
  deadLetterProducer?: BusProducerOptions;
  /** Partitions fetched and queued concurrently by kafkajs (default 1: queuing is cheap, handlers run here). */
  partitionsConsumedConcurrently?: number;
  /** Passed to `kafka.consumer()` (session timeout, heartbeat interval, fetch sizes…). */
  consumerConfig?: Partial<Omit<ConsumerConfig, 'groupId'>>;
  /** Receives errors the consumer handled itself (failed commits, dead-letter sends being retried). */
  onError?: (err: unknown, what: string) => void;
  /** Called once per record written to a dead-letter topic (metrics: `mesh_dead_letters_total`). */
  onDeadLetter?: (dead: DeadLettered) => void;
}

/**
 * Why a record was dead-lettered — a closed set, so it can be a metric label: it could not be
 * decoded, its handler refused it as not retryable, or it failed on every allowed attempt.
 */
export type DeadLetterReason = 'undecodable' | 'not_retryable' | 'attempts_exhausted';

/** Every {@link DeadLetterReason}, e.g. to start each metric series at 0. */
export const DEAD_LETTER_REASONS: readonly DeadLetterReason[] = ['undecodable', 'not_retryable', 'attempts_exhausted'];

/** One record written to its dead-letter topic. */
export interface DeadLettered {
  /** The topic the record came from. */
  topic: string;
  reason: DeadLetterReason;
  error: unknown;
}

/** Counters and gauges for metrics; see docs/bus.md for their meaning. */
export interface BusConsumerStats {
  inFlight: number;
  buffered: number;
  pausedPartitions: number;
  assignedPartitions: number;
  inFlightByTenant: Record<string, number>;
  processed: number;
  retried: number;
  deadLettered: number;
  commits: number;
  rebalances: number;
  /** Records skipped on arrival because the partition's last commit says they finished. */
  skippedFinished: number;
  partitions: Array<{
    topic: string;
    partition: number;
    inFlight: number;
    buffered: number;
    unfinished: number;
    committed: number;
    paused: boolean;
  }>;
}
