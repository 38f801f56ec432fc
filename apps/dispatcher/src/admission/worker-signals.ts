import { BusAdmin } from '@mesh/bus';
import type { Kafka } from 'kafkajs';
import type { WorkerSignals } from './admission.js';

/**
 * Backlog of an agent = total lag of its workers' consumer group on its command topic (group
 * `{prefix}agents.{agentId}`, the apps/agents convention), read at most once per `ttlMs` per agent
 * so admission costs no broker round trip on the hot path.
 */
export class KafkaWorkerSignals implements WorkerSignals {
  private readonly admin: BusAdmin;
  private readonly cache = new Map<string, { at: number; lag: Promise<number | undefined> }>();

  constructor(
    kafka: Kafka,
    private readonly groupOf: (agentId: string) => string,
    private readonly topicOf: (agentId: string) => string,
    private readonly health: (agentId: string) => boolean,
    private readonly ttlMs: number,
  ) {
    this.admin = new BusAdmin(kafka);
  }

  healthy(agentId: string): boolean {
    return this.health(agentId);
  }

  backlog(agentId: string): Promise<number | undefined> {
    const hit = this.cache.get(agentId);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.lag;
    const lag = this.admin
      .consumerLag(this.groupOf(agentId), [this.topicOf(agentId)])
      .then((rows) => (rows.length ? rows.reduce((n, r) => n + r.lag, 0) : undefined))
      // Unknown backlog never blocks work: the broker being slow is not the agent being full.
      .catch(() => undefined);
    this.cache.set(agentId, { at: Date.now(), lag });
    return lag;
  }

  async close(): Promise<void> {
    await this.admin.close();
  }
}
