import { TopicReader, type Kafka } from '@mesh/bus';
import type { AgentHeartbeat, AgentRecord, TopicNames } from '@mesh/contract';
import type { Logger } from '@mesh/telemetry';
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
  /** Where crashes and restarts of its readers are reported. */
  logger?: Logger;
}

/**
 * A live, in-memory cache of the directory: reads the compacted cards topic and the heartbeats
 * topic from the beginning, so a service (the dispatcher) answers "who is agent X, may tenant
 * T use it, is it healthy" without calling the directory. Every instance uses its own consumer
 * groups and commits nothing, so each replica holds the whole catalog.
 */
export class AgentCatalog {
  private readonly state: CatalogState;
  private readonly cards: TopicReader;
  private readonly heartbeats: TopicReader;

  constructor(private readonly opts: AgentCatalogOptions) {
    this.state = new CatalogState(opts.defaultTtlMs ?? 30_000);
    const prefix = opts.groupPrefix ?? 'agent-catalog';
    // Every instance reads both topics whole, from the beginning, under groups of its own.
    const reader = (topic: string, kind: string, onFetch?: () => void) =>
      new TopicReader(opts.kafka, {
        topic,
        group: (replicaId) => `${prefix}-${replicaId}-${kind}`,
        fromBeginning: true,
        commits: 'none',
        // Cards and heartbeats are few: the broker answers as soon as one comes, and an empty fetch
        // waits 500 ms there, so an idle replica does not poll its catalog eight times a second.
        consumerConfig: { maxWaitTimeInMs: 500 },
        ...(onFetch ? { onFetch } : {}),
        ...(opts.logger ? { logger: opts.logger } : {}),
      });
    this.cards = reader(opts.topics.cards(), 'cards');
    // Each completed fetch: the catalog can hear heartbeats (see CatalogState.heard).
    this.heartbeats = reader(opts.topics.heartbeats(), 'heartbeats', () => this.state.heard());
  }

  /**
   * Starts consuming; resolves once both topics have been read up to their end at start time. The
   * heartbeats are read from the start of their retention too (1 h; expired ones count for
   * nothing), so a replica that just started knows which agents are healthy instead of refusing
   * their work (503) until each worker's next heartbeat.
   */
  async start(): Promise<void> {
    const cardsRead = this.cards.start(
      {
        eachMessage: async ({ message }) => {
          const id = message.key?.toString();
          if (id) this.state.applyRecord(id, message.value ? (JSON.parse(message.value.toString('utf8')) as AgentRecord) : null);
        },
      },
      'caught-up',
    );
    const heartbeatsRead = this.heartbeats.start(
      {
        eachMessage: async ({ message }) => {
          try {
            const hb = JSON.parse(message.value?.toString('utf8') ?? '') as AgentHeartbeat;
            if (typeof hb.agentId === 'string' && typeof hb.atUnixMs === 'number') this.state.applyHeartbeat(hb);
          } catch {
            // A malformed heartbeat is advisory data: skip it.
          }
        },
      },
      'caught-up',
    );
    await Promise.all([cardsRead, heartbeatsRead]);
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
    await Promise.all([this.cards.stop(), this.heartbeats.stop()]);
  }
}
