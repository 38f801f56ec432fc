import type { Admin, Consumer, EachMessagePayload, Kafka, Producer } from 'kafkajs';
import { startProducerSpans, untracedProducer } from '@mesh/telemetry';
import type { TopicSettings } from '@mesh/contract';

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
  private readonly admin: Admin;
  private connected?: Promise<void>;
  private readonly ensured = new Set<string>();

  constructor(
    kafka: Kafka,
    private readonly partitionsFor: (topic: string) => number,
  ) {
    // Each message is traced as part of the request that wrote it (its headers' traceparent), not
    // of whatever context the batch happens to be sent in.
    this.producer = untracedProducer(kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false }));
    this.admin = kafka.admin();
  }

  private connect(): Promise<void> {
    this.connected ??= Promise.all([this.producer.connect(), this.admin.connect()]).then(
      () => undefined,
      (err: unknown) => {
        this.connected = undefined;
        throw err;
      },
    );
    return this.connected;
  }

  async ensureTopic(topic: string, partitions = this.partitionsFor(topic)): Promise<void> {
    if (this.ensured.has(topic)) return;
    await this.connect();
    const existing = await this.admin.listTopics();
    // createTopics answers false when the topic already exists: both mean it is there now.
    if (!existing.includes(topic))
      await this.admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true }).catch(ignoreExists);
    this.ensured.add(topic);
  }

  async ready(): Promise<void> {
    await this.connect();
    await this.admin.describeCluster();
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
    await Promise.all([this.producer.disconnect().catch(() => undefined), this.admin.disconnect().catch(() => undefined)]);
  }
}

export interface ConsumerOptions {
  groupId: string;
  topic: string;
  fromBeginning: boolean;
  /** Partitions processed in parallel; messages of one partition stay in order. */
  partitionsConsumedConcurrently?: number;
}

/** Runs a kafkajs consumer; a handler that throws makes kafkajs retry the message (no commit). */
export async function runConsumer(
  kafka: Kafka,
  opts: ConsumerOptions,
  handler: (payload: EachMessagePayload) => Promise<void>,
): Promise<RunningConsumer & { consumer: Consumer }> {
  const consumer = kafka.consumer({ groupId: opts.groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: opts.topic, fromBeginning: opts.fromBeginning });
  await consumer.run({ partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? 1, eachMessage: handler });
  return {
    consumer,
    async stop() {
      await consumer.disconnect().catch(() => undefined);
    },
  };
}

/** Creates a topic if missing (start-up of the topics this service reads); never grows one. */
export async function ensureTopic(kafka: Kafka, topic: string, { partitions, configEntries }: TopicSettings): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if ((await admin.listTopics()).includes(topic)) return;
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, configEntries }], waitForLeaders: true }).catch(ignoreExists);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Another process created the topic between our check and our create: that is success. */
function ignoreExists(err: unknown): boolean {
  const errors = (err as { errors?: Array<{ type?: string }> }).errors;
  if (Array.isArray(errors) && errors.every((e) => e.type === 'TOPIC_ALREADY_EXISTS')) return false;
  throw err;
}
