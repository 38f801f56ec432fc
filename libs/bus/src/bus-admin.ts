import kafkajs, { type Admin, type Kafka, type ITopicConfig } from 'kafkajs';
import { MeshError, sleep } from '@mesh/contract';
import { awaitTopicLeaders } from './topic-leaders.js';

/** How a topic is created by {@link BusAdmin.ensureTopic}. */
export interface TopicOptions {
  partitions: number;
  /** `cleanup.policy=compact` (e.g. the directory's card topic). */
  compacted?: boolean;
  retentionMs?: number;
  /** Defaults to the broker's `default.replication.factor`. */
  replicationFactor?: number;
  /** Further topic-level configs (e.g. from `TopicDefinitions` of `@mesh/contract`). */
  configEntries?: Array<{ name: string; value: string }>;
  /**
   * Whether an existing topic with fewer partitions is grown (default true). False for keyed
   * topics whose readers rely on per-key order: growing moves keys to other partitions.
   */
  grow?: boolean;
}

/** How a service waits for a topic another service creates ({@link BusAdmin.awaitTopic}). */
export interface TopicWait {
  /** The service that creates the topic, as the error names it (e.g. `the directory`). */
  owner: string;
  /** How long to wait before failing (default 60 s). */
  timeoutMs?: number;
  /** Between two looks at the topic list (default 500 ms). */
  pollMs?: number;
  /** Called once when the topic is missing at first (a log line: the service is waiting for its owner). */
  onWait?(topic: string): void;
}

/** Lag of one consumer group on one topic partition; offsets are decimal strings as Kafka gives them. */
export interface LagReport {
  groupId: string;
  topic: string;
  partition: number;
  /** Next offset the group will read; null when the group never committed on this partition. */
  committed: string | null;
  /** Offset the next produced record will get. */
  highWatermark: string;
  /** Records not yet committed by the group (counted from the low watermark when it never committed). */
  lag: number;
}

/** One member of a consumer group and the partitions the group's leader assigned to it. */
export interface GroupMember {
  memberId: string;
  clientId: string;
  clientHost: string;
  /** Topic → partitions, sorted. */
  assignment: Record<string, number[]>;
}

/** A consumer group as the broker's coordinator describes it now. */
export interface GroupDescription {
  groupId: string;
  /** `Stable`, `PreparingRebalance`, `CompletingRebalance`, `Empty` or `Dead` (never seen). */
  state: string;
  members: GroupMember[];
}

/**
 * Topic administration and lag queries. Topics are created here, explicitly, because the
 * broker runs with auto.create.topics.enable=false: producing to an unknown topic fails.
 */
export class BusAdmin {
  private readonly admin: Admin;
  private connected?: Promise<void>;

  constructor(kafka: Kafka) {
    this.admin = kafka.admin();
  }

  private connect(): Promise<void> {
    this.connected ??= this.admin.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    return this.connected;
  }

  /** Resolves once the cluster answers a metadata request; rejects while it does not. */
  async ping(): Promise<void> {
    await this.connect();
    await this.admin.describeCluster();
  }

  /**
   * Creates the topic when missing and (unless `grow: false`) grows its partition count when it
   * has fewer than asked; returns once every partition it has has a leader (a topic another
   * process has just created may not have them yet). Idempotent and safe to race with other
   * processes doing the same.
   */
  async ensureTopic(name: string, opts: TopicOptions): Promise<void> {
    await this.connect();
    const configEntries: ITopicConfig['configEntries'] = [...(opts.configEntries ?? [])];
    if (opts.compacted) configEntries.push({ name: 'cleanup.policy', value: 'compact' });
    if (opts.retentionMs !== undefined) configEntries.push({ name: 'retention.ms', value: String(opts.retentionMs) });
    let created = false;
    if (!(await this.admin.listTopics()).includes(name)) {
      try {
        // Leaders are awaited below: kafkajs' own wait fails on a transient "unknown topic" under load.
        created = await this.admin.createTopics({
          waitForLeaders: false,
          topics: [{ topic: name, numPartitions: opts.partitions, replicationFactor: opts.replicationFactor ?? -1, configEntries }],
        });
      } catch (err) {
        // Another process created it between our metadata view and the request: fine.
        if (!isAlreadyExists(err)) throw err;
      }
    }
    // Created here: all of its partitions; created elsewhere: those it has, whatever their count.
    await awaitTopicLeaders(this.admin, name, created ? opts.partitions : 1);
    if (created || opts.grow === false) return;
    const meta = await this.admin.fetchTopicMetadata({ topics: [name] });
    const have = meta.topics[0]?.partitions.length ?? 0;
    if (have < opts.partitions) {
      try {
        await this.admin.createPartitions({ topicPartitions: [{ topic: name, count: opts.partitions }] });
      } catch (err) {
        if (!/INVALID_PARTITIONS|already has/i.test(errorText(err))) throw err;
      }
    }
  }

  /** How many partitions the topic has now. */
  async partitionCount(name: string): Promise<number> {
    await this.connect();
    const meta = await this.admin.fetchTopicMetadata({ topics: [name] });
    return meta.topics[0]?.partitions.length ?? 0;
  }

  /**
   * Waits for a topic another service owns (creates) — this one only reads or writes it — until
   * it exists and its partitions have leaders. `onWait` is called once if it is missing at first.
   * Rejects after `timeoutMs` (default 60 s) with an UNAVAILABLE error naming the topic and its
   * owner, rather than creating it with settings that are not this service's to choose.
   */
  async awaitTopic(name: string, opts: TopicWait): Promise<void> {
    await this.connect();
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const until = Date.now() + timeoutMs;
    for (let first = true; !(await this.admin.listTopics()).includes(name); first = false) {
      if (first) opts.onWait?.(name);
      if (Date.now() >= until)
        throw new MeshError(
          'UNAVAILABLE',
          `topic ${name} does not exist after ${timeoutMs} ms: it is created by its owner, ${opts.owner}; start ${opts.owner} first (this service does not create it)`,
          { retryable: true },
        );
      await sleep(Math.min(opts.pollMs ?? 500, Math.max(1, until - Date.now())));
    }
    await awaitTopicLeaders(this.admin, name, 1, timeoutMs);
  }

  /** Per topic/partition: the group's committed offset, the high watermark and the lag. */
  async consumerLag(groupId: string, topics?: string[]): Promise<LagReport[]> {
    await this.connect();
    const committed = await this.admin.fetchOffsets({ groupId, ...(topics ? { topics } : {}) });
    const out: LagReport[] = [];
    for (const { topic, partitions } of committed) {
      const marks = await this.admin.fetchTopicOffsets(topic);
      const byPartition = new Map(marks.map((m) => [m.partition, m]));
      for (const p of partitions) {
        const mark = byPartition.get(p.partition);
        if (!mark) continue;
        const high = BigInt(mark.high);
        const low = BigInt(mark.low);
        const hasCommit = BigInt(p.offset) >= 0n;
        const from = hasCommit ? (BigInt(p.offset) > low ? BigInt(p.offset) : low) : low;
        out.push({
          groupId,
          topic,
          partition: p.partition,
          committed: hasCommit ? p.offset : null,
          highWatermark: mark.high,
          lag: Number(high > from ? high - from : 0n),
        });
      }
    }
    return out.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  }

  /** The group's members and their partition assignment (state `Dead`, no members: the group does not exist). */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    await this.connect();
    const { groups } = await this.admin.describeGroups([groupId]);
    const g = groups[0];
    const members = (g?.members ?? []).map((m) => {
      const decoded = m.memberAssignment.length ? kafkajs.AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
      const assignment = Object.fromEntries(
        Object.entries(decoded?.assignment ?? {}).map(([topic, parts]) => [topic, [...parts].sort((a, b) => a - b)]),
      );
      return { memberId: m.memberId, clientId: m.clientId, clientHost: m.clientHost, assignment };
    });
    return { groupId, state: g?.state ?? 'Dead', members: members.sort((a, b) => a.memberId.localeCompare(b.memberId)) };
  }

  /** Every topic's name, as the cluster's metadata has them now. */
  async listTopics(): Promise<string[]> {
    await this.connect();
    return this.admin.listTopics();
  }

  /** Whether the topic exists on the broker. */
  async topicExists(topic: string): Promise<boolean> {
    return (await this.listTopics()).includes(topic);
  }

  /** The group's committed offset and its metadata per partition of `topic` (offset -1: none). */
  async committedOffsets(groupId: string, topic: string): Promise<Array<{ partition: number; offset: number; metadata: string | null }>> {
    await this.connect();
    const [found] = await this.admin.fetchOffsets({ groupId, topics: [topic] });
    return (found?.partitions ?? []).map((p) => ({ partition: p.partition, offset: Number(p.offset), metadata: p.metadata }));
  }

  /**
   * Records in the topic now, summed over its partitions (high minus low watermark); 0 for a
   * topic that does not exist (yet), e.g. a dead-letter topic nothing was ever dead-lettered to.
   */
  async recordCount(topic: string): Promise<number> {
    await this.connect();
    const marks = await this.admin.fetchTopicOffsets(topic).catch(() => []);
    return marks.reduce((n, m) => n + Number(BigInt(m.high) - BigInt(m.low)), 0);
  }

  /** How long the broker keeps the topic's records (`retention.ms`; -1: forever). */
  async retentionMs(topic: string): Promise<number> {
    await this.connect();
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
    });
    const value = resources[0]?.configEntries.find((e) => e.configName === 'retention.ms')?.configValue;
    if (value === undefined) throw new Error(`the broker did not say the retention of topic ${topic}`);
    return Number(value);
  }

  /**
   * The largest record batch the topic accepts (`max.message.bytes`, the broker's default for a
   * topic without its own); a topic that does not exist yet gets the broker's `message.max.bytes`,
   * which it will inherit when created. The smallest value of any broker counts.
   */
  async maxMessageBytes(topic?: string): Promise<number> {
    await this.connect();
    if (topic !== undefined) {
      try {
        const { resources } = await this.admin.describeConfigs({
          includeSynonyms: false,
          resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] }],
        });
        const value = resources[0]?.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue;
        if (value !== undefined) return Number(value);
      } catch (err) {
        if (!/UNKNOWN_TOPIC|does not host this topic/i.test(errorText(err))) throw err;
      }
    }
    const { brokers } = await this.admin.describeCluster();
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: brokers.map((b) => ({
        type: kafkajs.ConfigResourceTypes.BROKER,
        name: String(b.nodeId),
        configNames: ['message.max.bytes'],
      })),
    });
    const values = resources
      .map((r) => r.configEntries.find((e) => e.configName === 'message.max.bytes')?.configValue)
      .filter((v): v is string => v !== undefined)
      .map(Number);
    if (values.length === 0) throw new Error('the brokers did not say their message.max.bytes');
    return Math.min(...values);
  }

  /** Nest lifecycle hook, so an instance registered as a provider disconnects on shutdown. */
  onModuleDestroy(): Promise<void> {
    return this.close();
  }

  async close(): Promise<void> {
    const wasConnected = this.connected;
    this.connected = undefined;
    if (wasConnected) await this.admin.disconnect().catch(() => undefined);
  }
}

function errorText(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { type?: string; message?: string; errors?: unknown[] };
    return [e.type, e.message, ...(e.errors ?? []).map(errorText)].filter(Boolean).join(' ');
  }
  return String(err);
}

function isAlreadyExists(err: unknown): boolean {
  return /TOPIC_ALREADY_EXISTS|already exists/i.test(errorText(err));
}

/** {@link BusAdmin.ensureTopic} for each topic, on an admin client of its own (a service's start-up). */
export async function ensureTopics(kafka: Kafka, topics: Array<{ name: string } & TopicOptions>): Promise<void> {
  const admin = new BusAdmin(kafka);
  try {
    for (const { name, ...opts } of topics) await admin.ensureTopic(name, opts);
  } finally {
    await admin.close();
  }
}

/** {@link BusAdmin.awaitTopic} for each topic, on an admin client of its own (a service's start-up). */
export async function awaitTopics(kafka: Kafka, names: string[], wait: TopicWait): Promise<void> {
  const admin = new BusAdmin(kafka);
  try {
    for (const name of names) await admin.awaitTopic(name, wait);
  } finally {
    await admin.close();
  }
}
