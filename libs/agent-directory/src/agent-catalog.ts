import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, ConsumerRunConfig, Kafka } from 'kafkajs';
import { sleep, type AgentHeartbeat, type AgentRecord, type TopicNames } from '@mesh/contract';
import { CatalogState } from './catalog-state.js';

/** Options of an AgentCatalog. */
export interface AgentCatalogOptions {
  /** A kafkajs client (e.g. `createKafka` from @mesh/bus). */
  kafka: Kafka;
  topics: TopicNames;
  /** TTL of heartbeats that carry none (default 30 s, like the directory). */
  defaultTtlMs?: number;
  /** Prefix of the per-instance consumer groups (a random suffix keeps every instance independent). */
  groupPrefix?: string;
  /**
   * Runs a consumer and keeps it consuming after a crash kafkajs does not recover from
   * (`runSupervised` from @mesh/bus); `stopping` says the catalog is being stopped. Without it the
   * consumers are run as they are.
   */
  run?(consumer: Consumer, config: ConsumerRunConfig, stopping: () => boolean): Promise<void>;
}

/**
 * A live, in-memory cache of the directory: reads the compacted cards topic and the heartbeats
 * topic from the beginning, so a service (the dispatcher) answers "who is agent X, may tenant
 * T use it, is it healthy" without calling the directory. Every instance uses its own consumer
 * groups and commits nothing, so each replica holds the whole catalog.
 */
export class AgentCatalog {
  private readonly state: CatalogState;
  private readonly cards: Consumer;
  private readonly heartbeats: Consumer;
  private stopped = false;

  constructor(private readonly opts: AgentCatalogOptions) {
    this.state = new CatalogState(opts.defaultTtlMs ?? 30_000);
    const group = `${opts.groupPrefix ?? 'agent-catalog'}-${randomUUID()}`;
    // Cards and heartbeats are few: the broker answers as soon as one comes, and an empty fetch
    // waits 500 ms there, so an idle replica does not poll its catalog eight times a second.
    this.cards = opts.kafka.consumer({ groupId: `${group}-cards`, maxWaitTimeInMs: 500 });
    this.heartbeats = opts.kafka.consumer({ groupId: `${group}-heartbeats`, maxWaitTimeInMs: 500 });
  }

  /**
   * Starts consuming; resolves once both topics have been read up to their end at start time. The
   * heartbeats are read from the start of their retention too (1 h; expired ones count for
   * nothing), so a replica that just started knows which agents are healthy instead of refusing
   * their work (503) until each worker's next heartbeat.
   */
  async start(): Promise<void> {
    const admin = this.opts.kafka.admin();
    await admin.connect();
    let cardsRead: CaughtUp;
    let heartbeatsRead: CaughtUp;
    try {
      cardsRead = await caughtUp(admin, this.opts.topics.cards());
      heartbeatsRead = await caughtUp(admin, this.opts.topics.heartbeats());
    } finally {
      await admin.disconnect();
    }

    await this.cards.connect();
    await this.cards.subscribe({ topic: this.opts.topics.cards(), fromBeginning: true });
    await this.run(this.cards, {
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const id = message.key?.toString();
        if (id) this.state.applyRecord(id, message.value ? (JSON.parse(message.value.toString('utf8')) as AgentRecord) : null);
        cardsRead.seen(partition, message.offset);
      },
    });
    // Each completed fetch: the catalog can hear heartbeats (see CatalogState.heard).
    this.heartbeats.on(this.heartbeats.events.FETCH, () => this.state.heard());
    await this.heartbeats.connect();
    await this.heartbeats.subscribe({ topic: this.opts.topics.heartbeats(), fromBeginning: true });
    await this.run(this.heartbeats, {
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        try {
          const hb = JSON.parse(message.value?.toString('utf8') ?? '') as AgentHeartbeat;
          if (typeof hb.agentId === 'string' && typeof hb.atUnixMs === 'number') this.state.applyHeartbeat(hb);
        } catch {
          // A malformed heartbeat is advisory data: skip it.
        }
        heartbeatsRead.seen(partition, message.offset);
      },
    });
    await Promise.all([cardsRead.done, heartbeatsRead.done]);
  }

  /** The agent as `viewerTenant` may see it (own or public; retired included), else undefined. */
  get(id: string, viewerTenant: string): AgentRecord | undefined {
    return this.state.get(id, viewerTenant);
  }

  /**
   * True while a heartbeat within its TTL exists for a registered, non-retired agent; time this
   * catalog could not fetch heartbeats (broker down, rejoining) does not count against the TTL.
   */
  healthy(id: string): boolean {
    return this.state.healthy(id);
  }

  /** Agents `viewerTenant` may use that have the skill (by id or tag), healthy ones first (see CatalogState.withSkill). */
  withSkill(skill: string, viewerTenant: string): AgentRecord[] {
    return this.state.withSkill(skill, viewerTenant);
  }

  /** Ids of the registered agents that are not retired, whoever owns them. */
  activeIds(): string[] {
    return this.state.activeIds();
  }

  /** Number of agents known (retired included). */
  get size(): number {
    return this.state.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.cards.disconnect(), this.heartbeats.disconnect()]);
  }

  /** Runs a consumer the owner's way when it gave one. */
  private run(consumer: Consumer, config: ConsumerRunConfig): Promise<void> {
    return this.opts.run ? this.opts.run(consumer, config, () => this.stopped) : consumer.run(config);
  }
}

/** Resolves `done` once every partition of a topic was read up to its end offset at creation. */
interface CaughtUp {
  done: Promise<void>;
  seen(partition: number, offset: string): void;
}

async function caughtUp(admin: Admin, topic: string): Promise<CaughtUp> {
  const offsets = await endOffsets(admin, topic);
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
