import { BusAdmin, BusProducer, type Kafka } from '@mesh/bus';
import type { TopicDefinition } from '@mesh/contract';

/** A command read from the outbox, on its way to its agent's command topic. */
export interface OutboxCommand {
  topic: string;
  key: string;
  headers: Record<string, string>;
  value: string;
  /** The agent whose channel `topic` is (sizes the topic when it does not exist yet). */
  agentId: string;
}

/** Where the outbox relay delivers commands. */
export interface CommandProducer {
  /** Resolves only once Kafka acknowledged every command (acks from all in-sync replicas). */
  send(commands: OutboxCommand[]): Promise<void>;
  /** Resolves once Kafka answers a metadata request (nothing is produced); rejects while it does not. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The relay's producer on `@mesh/bus`: creates a missing command topic before the first send to
 * it, sized by its agent's channel, and traces each command as part of the request that wrote it.
 */
export class BusCommandProducer implements CommandProducer {
  private readonly producer: BusProducer;
  private readonly admin: BusAdmin;
  private readonly ensured = new Set<string>();

  constructor(
    kafka: Kafka,
    /** The contract's definition of an agent's command topic (partitions, replication). */
    private readonly definitionOf: (agentId: string) => TopicDefinition,
  ) {
    // The relay lingers before it claims a batch; the producer need not linger again.
    this.producer = new BusProducer(kafka, { lingerMs: 0, spanPerRecord: true });
    this.admin = new BusAdmin(kafka);
  }

  async send(commands: OutboxCommand[]): Promise<void> {
    for (const c of commands) {
      if (this.ensured.has(c.topic)) continue;
      // Keyed by the agent's channel key: created, never grown (growing would reorder keys).
      const { name: _name, ...settings } = this.definitionOf(c.agentId);
      await this.admin.ensureTopic(c.topic, { ...settings, grow: false });
      this.ensured.add(c.topic);
    }
    await Promise.all(commands.map((c) => this.producer.sendRecord(c.topic, c.key, c.value, c.headers)));
  }

  ready(): Promise<void> {
    return this.admin.ping();
  }

  async close(): Promise<void> {
    await Promise.all([this.producer.disconnect(), this.admin.close()]);
  }
}
