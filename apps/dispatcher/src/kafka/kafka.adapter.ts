import type { Kafka, Producer } from 'kafkajs';
import { BusAdmin } from '@mesh/bus';
import { startProducerSpans, untracedProducer } from '@mesh/telemetry';

/**
 * A small adapter over kafkajs until `@mesh/bus` offers its producer/consumer: the dispatcher's
 * features depend on these two interfaces, never on kafkajs directly.
 */
export interface OutgoingMessage {
  topic: string;
  key: string;
  headers: Record<string, string>;
  value: string;
}

/** Produces batches with acks from all in-sync replicas; resolves only when Kafka acknowledged. */
export interface MessageProducer {
  send(messages: OutgoingMessage[]): Promise<void>;
  /** Resolves once Kafka answers a metadata request (nothing is produced); rejects while it does not. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** A running consumer; `stop` leaves the group cleanly. */
export interface RunningConsumer {
  stop(): Promise<void>;
}

/** kafkajs producer (idempotent) that creates missing topics before the first send to them. */
export class KafkaMessageProducer implements MessageProducer {
  private readonly producer: Producer;
  private readonly admin: BusAdmin;
  private connected?: Promise<void>;
  private readonly ensured = new Set<string>();

  constructor(
    kafka: Kafka,
    private readonly partitionsFor: (topic: string) => number,
  ) {
    // Each message is traced as part of the request that wrote it (its headers' traceparent), not
    // of whatever context the batch happens to be sent in.
    this.producer = untracedProducer(kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false }));
    this.admin = new BusAdmin(kafka);
  }

  private connect(): Promise<void> {
    this.connected ??= this.producer.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    return this.connected;
  }

  /** Command topics are keyed by the agent's channel key: created, never grown (that would reorder keys). */
  async ensureTopic(topic: string, partitions = this.partitionsFor(topic)): Promise<void> {
    if (this.ensured.has(topic)) return;
    await this.admin.ensureTopic(topic, { partitions, grow: false });
    this.ensured.add(topic);
  }

  ready(): Promise<void> {
    return this.admin.ping();
  }

  async send(messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.connect();
    const byTopic = new Map<string, OutgoingMessage[]>();
    for (const m of messages) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), m]);
    for (const topic of byTopic.keys()) await this.ensureTopic(topic);
    const traced = [...byTopic].map(([topic, ms]) => ({ topic, spans: startProducerSpans(ms) }));
    try {
      await this.producer.sendBatch({
        acks: -1,
        topicMessages: traced.map(({ topic, spans }) => ({
          topic,
          messages: spans.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
        })),
      });
    } catch (err) {
      for (const t of traced) t.spans.end(err);
      throw err;
    }
    for (const t of traced) t.spans.end();
  }

  async close(): Promise<void> {
    await Promise.all([this.producer.disconnect().catch(() => undefined), this.admin.close()]);
  }
}
