import { randomUUID } from 'node:crypto';
import {
  BusAdmin,
  createKafka,
  kafkaStartError,
  logLevel,
  readDeadLetters,
  replayDeadLetters,
  replayGroupId,
  type DeadLetterRecord,
  type GroupMember,
  type Kafka,
  type LagReport,
} from '@mesh/bus';
import { ConsumerGroups, TopicNames, type AgentHeartbeat } from '@mesh/contract';
import { CliError, ExitCode } from './cli-error.js';

/** Where the broker is, which topic prefix the installation uses, and the principal to connect as. */
export interface KafkaTarget {
  brokers: string[];
  prefix: string;
  /** Unset: none (a broker without authentication). */
  sasl?: { mechanism: 'scram-sha-512' | 'scram-sha-256' | 'plain'; username: string; password: string };
  ssl?: boolean;
}

// kafkajs logs nothing: its failures reach the operator as the one-line error they raise.
// KAFKAJS_LOG=debug brings its log back (on stderr) when that line is not enough.
const kafkaOf = (t: KafkaTarget) =>
  createKafka(
    { brokers: t.brokers, clientId: 'mesh-cli', ...(t.sasl ? { sasl: t.sasl } : {}), ...(t.ssl ? { ssl: true } : {}) },
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
    const name = err instanceof Error ? err.name : '';
    if (
      name === 'KafkaJSSASLAuthenticationError' ||
      (err as { type?: string }).type === 'UNSUPPORTED_SASL_MECHANISM' ||
      (!t.sasl && name === 'KafkaJSConnectionClosedError')
    )
      throw new CliError(kafkaStartError(t.brokers, t.sasl, err).message, ExitCode.failed);
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

/** A worker process as its heartbeats name it. */
export interface WorkerProcess {
  workerId: string;
  /** The host name it reported; null from a worker that predates hosts in heartbeats. */
  host: string | null;
  /** The Kafka principal it consumes as (its KAFKA_USERNAME); null without authentication or from older workers. */
  principal: string | null;
  /** The agents it runs (that heartbeat), sorted. */
  agents: string[];
  /** Its freshest heartbeat. */
  lastHeartbeatAt: string;
}

/** How far back heartbeats are read: well past any heartbeat's TTL (3 × the 5 s interval by default). */
const HEARTBEAT_LOOKBACK_MS = 5 * 60_000;
/** The TTL of a heartbeat that gives none (the directory's default). */
const DEFAULT_HEARTBEAT_TTL_MS = 30_000;

/** {@link readWorkerProcesses} with a client of its own. */
export async function workerProcesses(t: KafkaTarget, agentIds?: string[]): Promise<WorkerProcess[]> {
  return guard(t, () => readWorkerProcesses(kafkaOf(t), t.prefix, agentIds));
}

/**
 * The worker processes alive now, from the heartbeats topic (every worker beats for each of its
 * agents): those with a heartbeat within its TTL, by worker id, with host and agents. Only the
 * last few minutes of the topic are read, without committing anything; restricted to `agentIds`
 * when given. [] when the heartbeats topic does not exist.
 */
export async function readWorkerProcesses(kafka: Kafka, prefix: string, agentIds?: string[], now = Date.now()): Promise<WorkerProcess[]> {
  const topic = new TopicNames(prefix).heartbeats();
  const admin = kafka.admin();
  await admin.connect();
  let starts: Map<number, bigint>;
  let ends: Map<number, bigint>;
  try {
    if (!(await admin.listTopics()).includes(topic)) return [];
    ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
    // The first offset at or after the lookback's start; -1 where none is that recent.
    starts = new Map(
      (await admin.fetchTopicOffsetsByTimestamp(topic, now - HEARTBEAT_LOOKBACK_MS)).map((o) => [
        o.partition,
        o.offset === '-1' ? ends.get(o.partition)! : BigInt(o.offset),
      ]),
    );
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  const pending = new Set([...ends].filter(([p, high]) => (starts.get(p) ?? high) < high).map(([p]) => p));
  const wanted = agentIds ? new Set(agentIds) : undefined;
  const byWorker = new Map<string, { host: string | null; principal: string | null; agents: Set<string>; at: number }>();
  if (pending.size > 0) {
    const groupId = `mesh-heartbeat-reader-${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: false });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => resolve(), 15_000);
        consumer
          .run({
            autoCommit: false,
            eachMessage: async ({ partition, message }) => {
              const offset = BigInt(message.offset);
              if (!pending.has(partition) || offset < starts.get(partition)!) return;
              const beat = heartbeatOf(message.value);
              if (beat && beat.atUnixMs + (beat.ttlMs || DEFAULT_HEARTBEAT_TTL_MS) >= now && (!wanted || wanted.has(beat.agentId))) {
                const w = byWorker.get(beat.workerId) ?? { host: null, principal: null, agents: new Set<string>(), at: 0 };
                w.agents.add(beat.agentId);
                if (beat.atUnixMs >= w.at) {
                  w.at = beat.atUnixMs;
                  w.host = beat.host ?? w.host;
                  w.principal = beat.principal ?? w.principal;
                }
                byWorker.set(beat.workerId, w);
              }
              if (offset + 1n >= ends.get(partition)!) pending.delete(partition);
              if (pending.size === 0) {
                clearTimeout(timer);
                resolve();
              }
            },
          })
          .catch(reject);
        // Seeks apply once the consumer runs: each partition from its lookback's start.
        for (const p of pending) consumer.seek({ topic, partition: p, offset: String(starts.get(p)) });
      });
    } finally {
      await consumer.disconnect().catch(() => undefined);
      const cleanup = kafka.admin();
      await cleanup.connect().catch(() => undefined);
      await cleanup.deleteGroups([groupId]).catch(() => undefined);
      await cleanup.disconnect().catch(() => undefined);
    }
  }
  return [...byWorker]
    .map(([workerId, w]) => ({
      workerId,
      host: w.host,
      principal: w.principal,
      agents: [...w.agents].sort(),
      lastHeartbeatAt: new Date(w.at).toISOString(),
    }))
    .sort((a, b) => a.workerId.localeCompare(b.workerId));
}

/** A name a heartbeat reports (host, principal): a non-empty string of bounded length, else ignored. */
const reported = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 255;

/**
 * A heartbeat record's value, or undefined when it is not one (the topic is shared; never trust it
 * to parse). Host and principal are optional: a value that is no name is dropped, the beat kept.
 */
export function heartbeatOf(value: Buffer | null): AgentHeartbeat | undefined {
  if (!value) return undefined;
  try {
    const b = JSON.parse(value.toString('utf8')) as Partial<AgentHeartbeat>;
    if (typeof b.agentId !== 'string' || typeof b.workerId !== 'string' || typeof b.atUnixMs !== 'number') return undefined;
    return {
      agentId: b.agentId,
      workerId: b.workerId,
      atUnixMs: b.atUnixMs,
      ttlMs: typeof b.ttlMs === 'number' ? b.ttlMs : 0,
      ...(reported(b.host) ? { host: b.host } : {}),
      ...(reported(b.principal) ? { principal: b.principal } : {}),
    };
  } catch {
    return undefined;
  }
}
