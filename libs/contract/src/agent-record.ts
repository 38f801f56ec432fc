import type { JsonObject } from './json-types.js';

/** Who may see a registered agent: its owner only, its tenant, or every tenant. */
export type AgentVisibility = 'private' | 'tenant' | 'public';

/**
 * Value of the directory's compacted cards topic (key: agent id). Services keep a live cache of
 * these instead of calling the directory per request; a retired agent stays, with `retired: true`.
 */
export interface AgentRecord {
  id: string;
  /** Owning tenant. */
  tenant: string;
  visibility: AgentVisibility;
  version: number;
  /** The registered A2A 1.0 AgentCard as JSON (interfaces as registered, not rewritten). */
  card: JsonObject;
  channel: { keyTemplate: string; partitions: number };
  retired: boolean;
  updatedAt: string;
}

/** Value of the heartbeats topic (key: agent id), sent periodically by every worker process. */
export interface AgentHeartbeat {
  agentId: string;
  workerId: string;
  /** Host name of the worker's machine or pod; absent from workers that predate it. */
  host?: string;
  /**
   * The Kafka principal the worker authenticates as (its KAFKA_USERNAME, e.g. `team-words`): which
   * principal consumes the agent's commands. Absent without authentication and from older workers.
   */
  principal?: string;
  atUnixMs: number;
  /** How long this heartbeat counts; the agent is unhealthy when no heartbeat is fresher. */
  ttlMs: number;
}

/** True when `viewerTenant` may see the agent at all (others get "not found", never "forbidden"). */
export function canSee(record: Pick<AgentRecord, 'tenant' | 'visibility'>, viewerTenant: string): boolean {
  return record.visibility === 'public' || record.tenant === viewerTenant;
}
