import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { MeshError, normalizeHeaders, TopicNames } from '@mesh/contract';
import { BusProducer } from './bus-producer.js';
import { DEAD_LETTER_REASONS, type DeadLettered } from './consumer-types.js';

/** The part of `mesh_dead_letters_total` (a prom-client Counter) the bus records into. */
export interface DeadLetterCounter {
  inc(labels: { topic: string; reason: string }, value?: number): void;
}

/**
 * An `onDeadLetter` that counts into `counter`, whose series for `sourceTopics` start at 0 for every
 * reason: an alert on `increase()` then sees the first dead letter, not a series appearing.
 */
export function countDeadLetters(counter: DeadLetterCounter, sourceTopics: string[]): (dead: DeadLettered) => void {
  for (const topic of sourceTopics) for (const reason of DEAD_LETTER_REASONS) counter.inc({ topic, reason }, 0);
  return ({ topic, reason }) => counter.inc({ topic, reason });
}

/** Headers a dead letter carries besides the original record's own. */
export const DeadLetterHeaders = {
  error: 'dlq_error',
  errorCode: 'dlq_error_code',
  attempts: 'dlq_attempts',
  sourceTopic: 'dlq_source_topic',
  sourcePartition: 'dlq_source_partition',
  sourceOffset: 'dlq_source_offset',
  groupId: 'dlq_group_id',
  failedAt: 'dlq_failed_at',
} as const;

const DLQ_PREFIX = 'dlq_';

/** Where a failed record came from and why it failed. */
export interface DeadLetterCause {
  error: unknown;
  attempts: number;
  topic: string;
  partition: number;
  offset: string;
  groupId: string;
}

/** The dead-letter topic of a source topic (`{source}.dlq`). */
export function deadLetterTopic(sourceTopic: string): string {
  return new TopicNames().deadLetters(sourceTopic);
}

/** Original headers plus the failure description; earlier dead-letter headers are replaced. */
export function deadLetterHeaders(original: Record<string, string>, cause: DeadLetterCause): Record<string, string> {
  const err = cause.error;
  const message = err instanceof Error ? err.message : String(err);
  const code = err instanceof MeshError ? err.code : err instanceof Error ? err.name : 'UNKNOWN';
  return {
    ...withoutDeadLetterHeaders(original),
    [DeadLetterHeaders.error]: message.slice(0, 2000),
    [DeadLetterHeaders.errorCode]: String(code),
    [DeadLetterHeaders.attempts]: String(cause.attempts),
    [DeadLetterHeaders.sourceTopic]: cause.topic,
    [DeadLetterHeaders.sourcePartition]: String(cause.partition),
    [DeadLetterHeaders.sourceOffset]: cause.offset,
    [DeadLetterHeaders.groupId]: cause.groupId,
    [DeadLetterHeaders.failedAt]: new Date().toISOString(),
  };
}

/** The record's headers without the dead-letter description (what a replay sends back). */
export function withoutDeadLetterHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !k.startsWith(DLQ_PREFIX)));
}

/** One record of a dead-letter topic, as an operator needs to judge it (from its dead-letter headers). */
export interface DeadLetterRecord {
  partition: number;
  offset: string;
  key: string | null;
  error: string | null;
  errorCode: string | null;
  attempts: number | null;
  /** `{topic}/{partition}@{offset}` the record failed at. */
  source: string | null;
  failedAt: string | null;
}

/** Options of {@link readDeadLetters}. */
export interface ReadDeadLettersOptions {
  /** Return at most this many records (the first ones by partition and offset read). */
  limit: number;
  /** Give up waiting after this long (default 30 s) and return what was read. */
  timeoutMs?: number;
}

/** A dead letter's description from its headers. */
function deadLetterRecord(partition: number, offset: string, key: Buffer | null, h: Record<string, string>): DeadLetterRecord {
  return {
    partition,
    offset,
    key: key?.toString() ?? null,
    error: h[DeadLetterHeaders.error] ?? null,
    errorCode: h[DeadLetterHeaders.errorCode] ?? null,
    attempts: h[DeadLetterHeaders.attempts] ? Number(h[DeadLetterHeaders.attempts]) : null,
    source: h[DeadLetterHeaders.sourceTopic]
      ? `${h[DeadLetterHeaders.sourceTopic]}/${h[DeadLetterHeaders.sourcePartition]}@${h[DeadLetterHeaders.sourceOffset]}`
      : null,
    failedAt: h[DeadLetterHeaders.failedAt] ?? null,
  };
}

/**
 * Operator view: reads a dead-letter topic from its start to its end as of now, committing
 * nothing (a throwaway consumer group, deleted afterwards), sorted by partition and offset.
 * Resolves `undefined` when the topic does not exist.
 */
export async function readDeadLetters(
  kafka: Kafka,
  deadLetterTopic: string,
  opts: ReadDeadLettersOptions,
): Promise<DeadLetterRecord[] | undefined> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  try {
    if (!(await admin.listTopics()).includes(deadLetterTopic)) return undefined;
    ends = new Map((await admin.fetchTopicOffsets(deadLetterTopic)).map((o) => [o.partition, BigInt(o.high)]));
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  const out: DeadLetterRecord[] = [];
  const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([p]) => p));
  if (pending.size === 0) return out;
  const groupId = `mesh-dlq-reader-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: deadLetterTopic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => resolve(), opts.timeoutMs ?? 30_000);
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            if (!pending.has(partition)) return;
            if (out.length < opts.limit)
              out.push(deadLetterRecord(partition, message.offset, message.key, normalizeHeaders(message.headers)));
            if (BigInt(message.offset) + 1n >= ends.get(partition)!) pending.delete(partition);
            if (pending.size === 0 || out.length >= opts.limit) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect().catch(() => undefined);
    const cleanup = kafka.admin();
    await cleanup.connect().catch(() => undefined);
    await cleanup.deleteGroups([groupId]).catch(() => undefined);
    await cleanup.disconnect().catch(() => undefined);
  }
  return out.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
}

/** The consumer group whose committed offsets say how far replays of a dead-letter topic got. */
export function replayGroupId(deadLetterTopic: string): string {
  return `${deadLetterTopic}.replay`;
}

/** Options of {@link replayDeadLetters}. */
export interface ReplayOptions {
  /** Consumer group that remembers how far replays got (default {@link replayGroupId}). */
  groupId?: string;
  /** Called after each batch is sent: records sent so far and how many this replay will send at most. */
  onProgress?: (sent: number, total: number) => void;
  /** Replay at most this many records. */
  limit?: number;
  /** Give up waiting after this long (default 60 s); what was replayed so far stays replayed. */
  timeoutMs?: number;
}

/**
 * Operator command: sends the dead letters present now back to their source topic with their
 * original key, value and headers, and returns how many it sent. Progress is committed under a
 * consumer group, so a second call replays only what arrived since.
 */
export async function replayDeadLetters(kafka: Kafka, deadLetterTopic: string, opts: ReplayOptions = {}): Promise<number> {
  const groupId = opts.groupId ?? replayGroupId(deadLetterTopic);
  const limit = opts.limit ?? Infinity;
  const admin = kafka.admin();
  await admin.connect();
  let targets: Map<number, number>;
  let pending = 0;
  try {
    const marks = await admin.fetchTopicOffsets(deadLetterTopic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [deadLetterTopic] });
    const from = new Map(committed?.partitions.map((p) => [p.partition, Number(p.offset)]) ?? []);
    targets = new Map();
    for (const m of marks) {
      const start = Math.max(from.get(m.partition) ?? -1, Number(m.low));
      if (start < Number(m.high)) {
        targets.set(m.partition, Number(m.high));
        pending += Number(m.high) - start;
      }
    }
  } finally {
    await admin.disconnect();
  }
  if (targets.size === 0 || limit <= 0) return 0;

  const producer = new BusProducer(kafka);
  const consumer = kafka.consumer({ groupId });
  let sent = 0;
  let finish!: () => void;
  let fail!: (err: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const timer = setTimeout(() => finish(), opts.timeoutMs ?? 60_000);
  try {
    await producer.connect();
    await consumer.connect();
    await consumer.subscribe({ topic: deadLetterTopic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        const end = targets.get(batch.partition);
        if (end === undefined) return;
        const sends: Promise<void>[] = [];
        let last = -1;
        for (const m of batch.messages) {
          if (Number(m.offset) >= end || sent >= limit) break;
          const headers = normalizeHeaders(m.headers);
          const source = headers[DeadLetterHeaders.sourceTopic];
          if (!source)
            throw new MeshError('CONTRACT_VIOLATION', `dead letter at offset ${m.offset} has no ${DeadLetterHeaders.sourceTopic}`);
          sends.push(producer.sendRecord(source, m.key?.toString() ?? '', m.value, withoutDeadLetterHeaders(headers)));
          sent++;
          last = Number(m.offset);
        }
        try {
          await Promise.all(sends);
        } catch (err) {
          fail(err);
          throw err;
        }
        if (last >= 0) {
          opts.onProgress?.(sent, Math.min(pending, limit));
          resolveOffset(String(last));
          await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(last + 1) }]);
          if (last + 1 >= end) targets.delete(batch.partition);
        }
        if (targets.size === 0 || sent >= limit) finish();
        await heartbeat();
      },
    });
    await finished;
    return sent;
  } finally {
    clearTimeout(timer);
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect();
  }
}
