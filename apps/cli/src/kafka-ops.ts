import { BusAdmin, createKafka, readDeadLetters, replayDeadLetters, type DeadLetterRecord, type LagReport } from '@mesh/bus';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
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

/** Reads a dead-letter topic from the start to its current end without committing anything. */
export async function listDeadLetters(t: KafkaTarget, dlqTopic: string, limit: number): Promise<DeadLetterRecord[]> {
  return guard(t, async () => {
    const records = await readDeadLetters(kafkaOf(t), dlqTopic, { limit });
    if (!records) throw new CliError(`no dead-letter topic ${dlqTopic}`);
    return records;
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
