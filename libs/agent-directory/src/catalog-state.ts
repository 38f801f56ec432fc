import { canSee, type AgentHeartbeat, type AgentRecord } from '@mesh/contract';

/**
 * The in-memory state of the catalog: latest AgentRecord per agent id (from the compacted cards
 * topic) and when each agent stops being healthy (from heartbeats). No I/O: unit-testable.
 */
export class CatalogState {
  private readonly records = new Map<string, AgentRecord>();
  /** Per agent: health expires at `until` plus the deaf time after `deafAt` (see `heard`). */
  private readonly health = new Map<string, { until: number; deafAt: number }>();
  private lastHeard?: number;
  private deafMs = 0;

  constructor(
    private readonly defaultTtlMs = 30_000,
    private readonly now: () => number = Date.now,
    /** A gap between two `heard()` calls longer than this is time the catalog could not hear heartbeats. */
    private readonly deafAfterMs = 3_000,
  ) {}

  /**
   * The heartbeats consumer completed a fetch: heartbeats sent now would reach us. While it cannot
   * (broker down, group rejoining), silence says nothing about the workers, so that time does not
   * count against a heartbeat's TTL: an agent healthy when the outage began stays healthy until
   * the catalog has listened for a whole TTL without hearing it. Without this, every broker blip
   * longer than a TTL turned into 503 NO_HEALTHY_WORKER until the next heartbeats got through.
   */
  heard(): void {
    const t = this.now();
    if (this.lastHeard !== undefined && t - this.lastHeard > this.deafAfterMs) this.deafMs += t - this.lastHeard;
    this.lastHeard = t;
  }

  /** Total time the catalog could not hear, the current gap included. */
  private deafTotal(): number {
    const gap = this.lastHeard === undefined ? 0 : this.now() - this.lastHeard;
    return this.deafMs + (gap > this.deafAfterMs ? gap : 0);
  }

  private expiry(id: string): number {
    const h = this.health.get(id);
    return h ? h.until + (this.deafTotal() - h.deafAt) : 0;
  }

  /** Applies one cards-topic record; an older version never replaces a newer one. `null` = tombstone. */
  applyRecord(id: string, record: AgentRecord | null): void {
    if (record === null) {
      this.records.delete(id);
      return;
    }
    const current = this.records.get(id);
    if (current && (current.version > record.version || (current.version === record.version && current.retired && !record.retired))) return;
    this.records.set(id, record);
  }

  /** Applies a heartbeat; a worker clock ahead of ours never extends health beyond now + TTL. */
  applyHeartbeat(hb: AgentHeartbeat): void {
    const at = Math.min(hb.atUnixMs, this.now());
    const until = at + (hb.ttlMs > 0 ? hb.ttlMs : this.defaultTtlMs);
    if (until > this.expiry(hb.agentId)) this.health.set(hb.agentId, { until, deafAt: this.deafTotal() });
  }

  /** The agent as `viewerTenant` may see it (its own, or public), retired ones included; else undefined. */
  get(id: string, viewerTenant: string): AgentRecord | undefined {
    const r = this.records.get(id);
    return r && canSee(r, viewerTenant) ? r : undefined;
  }

  /**
   * True when a heartbeat within its TTL (time the catalog could not hear not counted) exists and
   * the agent is registered and not retired.
   */
  healthy(id: string): boolean {
    const r = this.records.get(id);
    return !!r && !r.retired && this.expiry(id) > this.now();
  }

  /**
   * Agents `viewerTenant` may use (its own or public, not retired) whose card has a skill with id
   * `skill` or tagged `skill`; healthy ones first, then by id, so the choice is the same on every replica.
   */
  withSkill(skill: string, viewerTenant: string): AgentRecord[] {
    const has = (r: AgentRecord) =>
      Array.isArray(r.card.skills) &&
      (r.card.skills as Array<{ id?: unknown; tags?: unknown }>).some(
        (s) => s.id === skill || (Array.isArray(s.tags) && s.tags.includes(skill)),
      );
    return [...this.records.values()]
      .filter((r) => !r.retired && canSee(r, viewerTenant) && has(r))
      .sort((a, b) => Number(this.healthy(b.id)) - Number(this.healthy(a.id)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Ids of the registered agents that are not retired. */
  activeIds(): string[] {
    return [...this.records.values()].filter((r) => !r.retired).map((r) => r.id);
  }

  get size(): number {
    return this.records.size;
  }
}
