import { canSee, type AgentHeartbeat, type AgentRecord } from '@mesh/contract';

/**
 * The in-memory state of the catalog: latest AgentRecord per agent id (from the compacted cards
 * topic) and when each agent stops being healthy (from heartbeats). No I/O: unit-testable.
 */
export class CatalogState {
  private readonly records = new Map<string, AgentRecord>();
  private readonly healthyUntil = new Map<string, number>();

  constructor(
    private readonly defaultTtlMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

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
    if (until > (this.healthyUntil.get(hb.agentId) ?? 0)) this.healthyUntil.set(hb.agentId, until);
  }

  /** The agent as `viewerTenant` may see it (its own, or public), retired ones included; else undefined. */
  get(id: string, viewerTenant: string): AgentRecord | undefined {
    const r = this.records.get(id);
    return r && canSee(r, viewerTenant) ? r : undefined;
  }

  /** True when a heartbeat within its TTL exists and the agent is registered and not retired. */
  healthy(id: string): boolean {
    const r = this.records.get(id);
    return !!r && !r.retired && (this.healthyUntil.get(id) ?? 0) > this.now();
  }

  get size(): number {
    return this.records.size;
  }
}
