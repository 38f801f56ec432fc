import type { AgentHeartbeat, AgentRecord } from '@mesh/contract';

/**
 * What the directory needs from Kafka: create an agent's command topic, publish card records.
 * The Kafka adapter is beside it; tests of other parts may use an in-memory one.
 */
export interface CardStream {
  /** Creates the agent's command topic, or grows it to `partitions` (never shrinks); idempotent. */
  ensureCommandTopic(agentId: string, partitions: number): Promise<void>;
  /** Writes one record to the compacted cards topic, keyed by agent id; resolves once acknowledged. */
  publish(record: AgentRecord): Promise<void>;
  /** Forwards an HTTP heartbeat to the heartbeats topic, so live caches (dispatchers) see it too. */
  publishHeartbeat(heartbeat: AgentHeartbeat): Promise<void>;
}

/** In-memory CardStream (unit tests). */
export class InMemoryCardStream implements CardStream {
  readonly topics = new Map<string, number>();
  readonly published: AgentRecord[] = [];
  readonly heartbeats: AgentHeartbeat[] = [];
  failNext = 0;

  async ensureCommandTopic(agentId: string, partitions: number): Promise<void> {
    this.topics.set(agentId, Math.max(partitions, this.topics.get(agentId) ?? 0));
  }

  async publish(record: AgentRecord): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('injected publish failure');
    }
    this.published.push(record);
  }

  async publishHeartbeat(heartbeat: AgentHeartbeat): Promise<void> {
    this.heartbeats.push(heartbeat);
  }
}
