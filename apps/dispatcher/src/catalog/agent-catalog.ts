import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AgentCatalog } from '@mesh/agent-directory';
import { awaitTopics, type Kafka } from '@mesh/bus';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { canSee, type AgentRecord, type ConsumerGroups, type TopicDefinitions } from '@mesh/contract';

/** Where agents come from: the directory's live records. */
export interface AgentLookup {
  /** The agent as `tenant` may use it: undefined when unknown, retired or not visible to it. */
  resolve(agentId: string, tenant: string | undefined): AgentRecord | undefined;
  /** Any record, visible or not (internal use: partitions of a command topic). */
  get(agentId: string): AgentRecord | undefined;
}

/** In-memory lookup (unit tests, demo). */
export class InMemoryAgentCatalog implements AgentLookup {
  protected readonly records = new Map<string, AgentRecord>();

  put(record: AgentRecord): void {
    const current = this.records.get(record.id);
    // Compaction can replay an older value after a newer one was seen: keep the highest version.
    if (current && current.version > record.version) return;
    this.records.set(record.id, record);
  }

  remove(agentId: string): void {
    this.records.delete(agentId);
  }

  get(agentId: string): AgentRecord | undefined {
    return this.records.get(agentId);
  }

  resolve(agentId: string, tenant: string | undefined): AgentRecord | undefined {
    const r = this.records.get(agentId);
    if (!r || r.retired) return undefined;
    if (tenant === undefined) return r.visibility === 'public' ? r : undefined;
    return canSee(r, tenant) ? r : undefined;
  }
}

/**
 * The directory's live catalog (`@mesh/agent-directory`: compacted cards topic from the beginning,
 * heartbeats from now, per-replica groups) behind the dispatcher's lookup, plus worker health for
 * admission control.
 */
export class DirectoryAgentLookup implements AgentLookup, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly catalog: AgentCatalog;
  /** Owner tenant of each agent seen, for the tenant-less internal `get`. */
  private readonly owners = new Map<string, string>();
  private readonly log: Logger;

  constructor(
    private readonly kafka: Kafka,
    private readonly topics: TopicDefinitions,
    groups: ConsumerGroups,
    logger: Logger = silentLogger,
    /** How long start-up waits for the directory's topics before it fails. */
    private readonly topicWaitMs = 120_000,
  ) {
    this.log = logger.child({ src: 'agent-catalog' });
    this.catalog = new AgentCatalog({
      kafka,
      topics: topics.names,
      groupPrefix: groups.dispatcherCatalog(),
      logger: this.log,
    });
  }

  async start(): Promise<void> {
    // The directory owns (creates) both topics: a dispatcher started first waits for it.
    const names = [this.topics.names.cards(), this.topics.names.heartbeats()];
    await awaitTopics(this.kafka, names, {
      owner: 'the directory',
      timeoutMs: this.topicWaitMs,
      onWait: (topic) => this.log.warn({ topic }, 'waiting for the directory to create the topic'),
    });
    await this.catalog.start();
  }

  resolve(agentId: string, tenant: string | undefined): AgentRecord | undefined {
    // Anonymous callers (card discovery) see public agents only: '' is no tenant's name.
    const r = this.catalog.get(agentId, tenant ?? '');
    if (!r || r.retired) return undefined;
    this.owners.set(r.id, r.tenant);
    return r;
  }

  /** The agent's record as `tenant` sees it, a retired one included (undefined: unknown or not visible). */
  recordFor(agentId: string, tenant: string): AgentRecord | undefined {
    const r = this.catalog.get(agentId, tenant);
    // Commands may go to it now (a delegated task): the relay reads its partitions through `get`.
    if (r) this.owners.set(r.id, r.tenant);
    return r;
  }

  get(agentId: string): AgentRecord | undefined {
    const owner = this.owners.get(agentId);
    return owner === undefined ? undefined : this.catalog.get(agentId, owner);
  }

  healthy(agentId: string): boolean {
    return this.catalog.healthy(agentId);
  }

  /** Whether the agent is public (what a caller without a tenant sees), retired or not: only those are named on `/metrics`. */
  isPublic(agentId: string): boolean {
    return this.catalog.get(agentId, '')?.visibility === 'public';
  }

  /**
   * The agent `tenant` may use for a skill (by skill id or tag) among those `owner` registered: a
   * healthy one first; undefined when none has it.
   */
  bySkill(skill: string, tenant: string, owner: string): AgentRecord | undefined {
    const r = this.catalog.withSkill(skill, tenant).find((a) => a.tenant === owner);
    if (r) this.owners.set(r.id, r.tenant);
    return r;
  }

  /** Every registered agent that is not retired (operations: backlog gauges). */
  activeIds(): string[] {
    return this.catalog.activeIds();
  }

  stop(): Promise<void> {
    return this.catalog.stop();
  }

  /** Loaded before the relay starts: a command topic is created with its agent's partition count. */
  onApplicationBootstrap(): Promise<void> {
    return this.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }
}
