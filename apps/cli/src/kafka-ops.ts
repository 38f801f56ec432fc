import {
  BusAdmin,
  createKafka,
  logLevel,
  readDeadLetters,
  replayDeadLetters,
  replayGroupId,
  type DeadLetterRecord,
  type GroupMember,
  type Kafka,
  type LagReport,
} from '@mesh/bus';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import { CliError, ExitCode } from './cli-error.js';

/** Where the broker is and which topic prefix the installation uses. */
export interface KafkaTarget {
  brokers: string[];
  prefix: string;
}

// kafkajs logs nothing: its failures reach the operator as the one-line error they raise.
// KAFKAJS_LOG=debug brings its log back (on stderr) when that line is not enough.
const kafkaOf = (t: KafkaTarget) =>
  createKafka(
    { brokers: t.brokers, clientId: 'mesh-cli' },
    {
      retry: { retries: 1 },
      connectionTimeout: 3000,
      logLevel: process.env.KAFKAJS_LOG === 'debug' ? logLevel.DEBUG : logLevel.NOTHING,
    },
  );

async function guard<T>(t: KafkaTarget, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CliError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    if (/does not host this topic-partition|UNKNOWN_TOPIC/i.test(msg))
      throw new CliError(`Kafka at ${t.brokers.join(',')}: a topic asked for does not exist`, ExitCode.failed, 'not_found');
    const unreachable = /connect|ECONNREFUSED|ENOTFOUND|timeout/i.test(msg);
    throw new CliError(`Kafka at ${t.brokers.join(',')}: ${msg}`, unreachable ? ExitCode.unreachable : ExitCode.failed);
  }
}

async function withAdmin<T>(t: KafkaTarget, fn: (admin: BusAdmin) => Promise<T>): Promise<T> {
  return guard(t, async () => {
    const admin = new BusAdmin(kafkaOf(t));
    try {
      return await fn(admin);
    } finally {
      await admin.close().catch(() => undefined);
    }
  });
}

const unknownAgent = (agentId: string, topic: string) =>
  new CliError(`unknown agent ${agentId}: there is no command topic ${topic} (check the id and --prefix)`, ExitCode.failed, 'not_found');

/** Lag of each agent's worker group on its command topic. */
export async function agentLag(
  t: KafkaTarget,
  agentIds: string[],
): Promise<Array<{ agentId: string; lag: number; partitions: LagReport[] }>> {
  const topics = new TopicNames(t.prefix);
  const groups = new ConsumerGroups(t.prefix);
  return withAdmin(t, async (admin) => {
    const out = [];
    for (const agentId of agentIds) {
      const topic = topics.commands(agentId);
      if (!(await admin.topicExists(topic))) throw unknownAgent(agentId, topic);
      const partitions = await admin.consumerLag(groups.agentWorkers(agentId), [topic]);
      out.push({ agentId, lag: partitions.reduce((n, p) => n + p.lag, 0), partitions });
    }
    return out;
  });
}

/** One agent's worker group: its members, who reads which partition, the lag there. */
export interface AgentWorkers {
  agentId: string;
  topic: string;
  groupId: string;
  /** The coordinator's view (`Stable`, `Empty`, a rebalance in progress…). */
  state: string;
  members: Array<{ memberId: string; clientId: string; host: string; partitions: number[] }>;
  partitions: Array<{ partition: number; memberId: string | null; committed: string | null; lag: number }>;
  lag: number;
  /** Records wait and no worker is in the group to read them: the agent is stuck until one starts. */
  lagWithoutConsumer: boolean;
}

/** Worker-group members, partition assignment and lag per partition of each agent's command topic. */
export async function agentWorkers(t: KafkaTarget, agentIds: string[]): Promise<AgentWorkers[]> {
  return withAdmin(t, async (admin) => {
    const out: AgentWorkers[] = [];
    for (const agentId of agentIds) {
      const w = await describeWorkers(admin, t.prefix, agentId);
      if (!w) throw unknownAgent(agentId, new TopicNames(t.prefix).commands(agentId));
      out.push(w);
    }
    return out;
  });
}

/** One agent's worker group as {@link AgentWorkers}; undefined when its command topic does not exist. */
export async function describeWorkers(admin: BusAdmin, prefix: string, agentId: string): Promise<AgentWorkers | undefined> {
  const topic = new TopicNames(prefix).commands(agentId);
  if (!(await admin.topicExists(topic))) return undefined;
  const groupId = new ConsumerGroups(prefix).agentWorkers(agentId);
  const group = await admin.describeGroup(groupId);
  const lag = await admin.consumerLag(groupId, [topic]);
  const owner = new Map<number, GroupMember>();
  for (const m of group.members) for (const p of m.assignment[topic] ?? []) owner.set(p, m);
  const total = lag.reduce((n, p) => n + p.lag, 0);
  return {
    agentId,
    topic,
    groupId,
    state: group.state,
    members: group.members.map((m) => ({
      memberId: m.memberId,
      clientId: m.clientId,
      host: m.clientHost,
      partitions: m.assignment[topic] ?? [],
    })),
    partitions: lag.map((p) => ({
      partition: p.partition,
      memberId: owner.get(p.partition)?.memberId ?? null,
      committed: p.committed,
      lag: p.lag,
    })),
    lag: total,
    lagWithoutConsumer: total > 0 && group.members.length === 0,
  };
}

/** A dead letter and whether a replay has already sent it back (it is before the replay group's committed offset). */
export type ListedDeadLetter = DeadLetterRecord & { replayed: boolean };

/**
 * For a dead-letter topic that does not exist: nothing was ever dead-lettered when its source topic
 * exists; when that does not exist either, a not_found CliError naming both.
 */
async function requireSourceOf(admin: BusAdmin, dlqTopic: string): Promise<void> {
  const source = dlqTopic.replace(/\.dlq$/, '');
  if (source !== dlqTopic && (await admin.topicExists(source))) return;
  throw new CliError(
    `no topic ${source} and no dead-letter topic ${dlqTopic} (check the agent id or topic and --prefix)`,
    ExitCode.failed,
    'not_found',
  );
}

/** Reads a dead-letter topic from the start to its current end without committing anything ([] when none was ever written). */
export async function listDeadLetters(t: KafkaTarget, dlqTopic: string, limit: number): Promise<ListedDeadLetter[]> {
  return withAdmin(t, async (admin) => {
    const records = await readMarkedDeadLetters(kafkaOf(t), admin, dlqTopic, limit);
    if (records) return records;
    await requireSourceOf(admin, dlqTopic);
    return [];
  });
}

/** {@link listDeadLetters} on a client the caller holds; undefined when the topic does not exist. */
export async function readMarkedDeadLetters(
  kafka: Kafka,
  admin: BusAdmin,
  dlqTopic: string,
  limit: number,
): Promise<ListedDeadLetter[] | undefined> {
  const records = await readDeadLetters(kafka, dlqTopic, { limit });
  if (!records) return undefined;
  const replayedUpTo = new Map(
    (await admin.committedOffsets(replayGroupId(dlqTopic), dlqTopic)).map((c) => [c.partition, BigInt(c.offset)]),
  );
  return records.map((r) => ({ ...r, replayed: BigInt(r.offset) < (replayedUpTo.get(r.partition) ?? 0n) }));
}

/** What a replay would send now: the dead letters no replay has sent back yet, at most `limit`. */
export async function replayPlan(t: KafkaTarget, dlqTopic: string, limit: number | undefined): Promise<ListedDeadLetter[]> {
  const all = await listDeadLetters(t, dlqTopic, Number.MAX_SAFE_INTEGER);
  return all.filter((r) => !r.replayed).slice(0, limit ?? Infinity);
}

/** Replays a dead-letter topic into its source topics (libs/bus replayDeadLetters); returns how many. */
export async function replay(
  t: KafkaTarget,
  dlqTopic: string,
  opts: { limit?: number; timeoutMs?: number; onProgress?: (sent: number, total: number) => void },
): Promise<number> {
  return guard(t, async () => {
    const exists = await withAdmin(t, async (admin) => {
      if (await admin.topicExists(dlqTopic)) return true;
      await requireSourceOf(admin, dlqTopic);
      return false;
    });
    if (!exists) return 0;
    return replayDeadLetters(kafkaOf(t), dlqTopic, {
      ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
  });
}

/** The dead-letter topic an operator means: a `*.dlq` topic, a source topic, or an agent id (its command topic). */
export function deadLetterTopicOf(prefix: string, topicOrAgent: string): string {
  if (topicOrAgent.endsWith('.dlq')) return topicOrAgent;
  return new TopicNames().deadLetters(topicOrAgent.includes('.') ? topicOrAgent : new TopicNames(prefix).commands(topicOrAgent));
}
