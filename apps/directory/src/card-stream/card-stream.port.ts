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
  /** Creates the cards topic when missing (never grown: keyed). The heartbeats topic is the liveness module's. */
  ensureCardsTopic(): Promise<void>;
  /** Of these agent ids, those whose command topic does not exist. */
  missingCommandTopics(agentIds: string[]): Promise<string[]>;
  /** What the cluster holds of the cards topic, to tell whether it lost records (see CardReconciler). */
  cardsTopicState(): Promise<CardsTopicState>;
}

/** The cards topic as the cluster has it now. */
export interface CardsTopicState {
  /** Identity of the Kafka cluster: a replaced or re-formatted cluster has a new one. */
  clusterId: string;
  /** End offset of each partition (index = partition); null when the topic does not exist. */
  endOffsets: number[] | null;
}

/** In-memory CardStream (unit tests). */
export class InMemoryCardStream implements CardStream {
  readonly topics = new Map<string, number>();
  readonly published: AgentRecord[] = [];
  readonly heartbeats: AgentHeartbeat[] = [];
  failNext = 0;
  /** Stands for the cluster: change it (and clear `published`) to simulate a replaced one. */
  clusterId = 'in-memory';

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

  async ensureCardsTopic(): Promise<void> {}

  async missingCommandTopics(agentIds: string[]): Promise<string[]> {
    return agentIds.filter((id) => !this.topics.has(id));
  }

  async cardsTopicState(): Promise<CardsTopicState> {
    return { clusterId: this.clusterId, endOffsets: [this.published.length] };
  }
}
