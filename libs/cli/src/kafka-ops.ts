import { randomUUID } from 'node:crypto';
import { BusAdmin, createKafka, DeadLetterHeaders, replayDeadLetters, type LagReport } from '@mesh/bus';
import { ConsumerGroups, normalizeHeaders, TopicNames } from '@mesh/contract';
import { CliError, ExitCode } from './cli-error.js';

/** Where the broker is and which topic prefix the installation uses. */
export interface KafkaTarget {
  brokers: string[];
  prefix: string;
}

const kafkaOf = (t: KafkaTarget) =>
  createKafka({ brokers: t.brokers, clientId: 'mesh-cli' }, { retry: { retries: 1 }, connectionTimeout: 3000 });

async function guard<T>(t: KafkaTarget, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CliError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    const unreachable = /connect|ECONNREFUSED|ENOTFOUND|timeout/i.test(msg);
    throw new CliError(`Kafka at ${t.brokers.join(',')}: ${msg}`, unreachable ? ExitCode.unreachable : ExitCode.failed);
  }
}

/** Lag of each agent's worker group on its command topic. */
export async function agentLag(
  t: KafkaTarget,
  agentIds: string[],
): Promise<Array<{ agentId: string; lag: number; partitions: LagReport[] }>> {
  return guard(t, async () => {
    const topics = new TopicNames(t.prefix);
    const groups = new ConsumerGroups(t.prefix);
    const admin = new BusAdmin(kafkaOf(t));
    try {
      const out = [];
      for (const agentId of agentIds) {
        const partitions = await admin.consumerLag(groups.agentWorkers(agentId), [topics.commands(agentId)]);
        out.push({ agentId, lag: partitions.reduce((n, p) => n + p.lag, 0), partitions });
      }
      return out;
    } finally {
      await admin.close().catch(() => undefined);
    }
  });
}

/** One record of a dead-letter topic, as an operator needs to judge it. */
export interface DeadLetterView {
  partition: number;
  offset: string;
  key: string | null;
  error: string | null;
  errorCode: string | null;
  attempts: number | null;
  source: string | null;
  failedAt: string | null;
}

/** Reads a dead-letter topic from the start to its current end without committing anything. */
export async function listDeadLetters(t: KafkaTarget, dlqTopic: string, limit: number): Promise<DeadLetterView[]> {
  return guard(t, async () => {
    const kafka = kafkaOf(t);
    const admin = kafka.admin();
    await admin.connect();
    let ends: Map<number, bigint>;
    try {
      if (!(await admin.listTopics()).includes(dlqTopic)) throw new CliError(`no dead-letter topic ${dlqTopic}`);
      ends = new Map((await admin.fetchTopicOffsets(dlqTopic)).map((o) => [o.partition, BigInt(o.high)]));
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    const out: DeadLetterView[] = [];
    const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([p]) => p));
    if (pending.size === 0) return out;
    const groupId = `mesh-cli-${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: dlqTopic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => resolve(), 30000);
        consumer
          .run({
            autoCommit: false,
            eachMessage: async ({ partition, message }) => {
              if (!pending.has(partition)) return;
              const h = normalizeHeaders(message.headers);
              if (out.length < limit)
                out.push({
                  partition,
                  offset: message.offset,
                  key: message.key?.toString() ?? null,
                  error: h[DeadLetterHeaders.error] ?? null,
                  errorCode: h[DeadLetterHeaders.errorCode] ?? null,
                  attempts: h[DeadLetterHeaders.attempts] ? Number(h[DeadLetterHeaders.attempts]) : null,
                  source: h[DeadLetterHeaders.sourceTopic]
                    ? `${h[DeadLetterHeaders.sourceTopic]}/${h[DeadLetterHeaders.sourcePartition]}@${h[DeadLetterHeaders.sourceOffset]}`
                    : null,
                  failedAt: h[DeadLetterHeaders.failedAt] ?? null,
                });
              if (BigInt(message.offset) + 1n >= ends.get(partition)!) pending.delete(partition);
              if (pending.size === 0 || out.length >= limit) {
                clearTimeout(timer);
                resolve();
              }
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect().catch(() => undefined);
      const admin2 = kafka.admin();
      await admin2.connect().catch(() => undefined);
      await admin2.deleteGroups([groupId]).catch(() => undefined);
      await admin2.disconnect().catch(() => undefined);
    }
    return out.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  });
}

/** Replays a dead-letter topic into its source topics (libs/bus replayDeadLetters); returns how many. */
export async function replay(t: KafkaTarget, dlqTopic: string, opts: { limit?: number; timeoutMs?: number }): Promise<number> {
  return guard(t, () =>
    replayDeadLetters(kafkaOf(t), dlqTopic, {
      ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    }),
  );
}
