import type { Admin, Kafka, Producer } from 'kafkajs';
import { DIRECTORY_TOPICS, TopicNames, type AgentHeartbeat, type AgentRecord } from '@mesh/contract';
import type { CardStream } from './card-stream.port.js';
import { awaitTopicLeaders } from './topic-leaders.js';

/** Options of the Kafka card stream. */
export interface KafkaCardStreamOptions {
  topics: TopicNames;
  replicationFactor: number;
  /**
   * Client for admin calls. Polling a just-created topic makes kafkajs log each transient
   * "unknown topic" at error level; a quiet client here keeps that out of the logs (failures
   * still throw and are reported by the caller).
   */
  adminKafka?: Kafka;
}

// Kafka error kafkajs surfaces when a topic already has at least the partitions asked for.
const INVALID_PARTITIONS = 'INVALID_PARTITIONS';

/**
 * CardStream over kafkajs. Kept behind the port so it can switch to `@mesh/bus`'s
 * BusAdmin.ensureTopic / BusProducer.sendRecord once those exist.
 */
export class KafkaCardStream implements CardStream {
  private readonly admin: Admin;
  private readonly producer: Producer;

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaCardStreamOptions,
  ) {
    this.admin = (opts.adminKafka ?? kafka).admin();
    // Idempotent producer: a retried send never duplicates or reorders records of one key.
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  }

  /** Connects and creates the compacted cards topic. */
  async start(): Promise<void> {
    await this.admin.connect();
    await this.producer.connect();
    const { partitions, configEntries } = DIRECTORY_TOPICS.cards;
    await this.createTopics([{ topic: this.opts.topics.cards(), numPartitions: partitions, configEntries }]);
  }

  async stop(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
  }

  async ensureCommandTopic(agentId: string, partitions: number): Promise<void> {
    const topic = this.opts.topics.commands(agentId);
    // kafkajs resolves false (no throw) when the topic exists; only then can it be too small.
    // Leaders are awaited separately: kafkajs' own wait surfaces a transient "unknown topic" under load.
    const created = await this.admin.createTopics({
      waitForLeaders: false,
      topics: [{ topic, numPartitions: partitions, replicationFactor: this.opts.replicationFactor }],
    });
    if (!created) await this.growCommandTopic(agentId, partitions);
    else await awaitTopicLeaders(this.admin, topic, partitions);
  }

  async growCommandTopic(agentId: string, partitions: number): Promise<void> {
    const topic = this.opts.topics.commands(agentId);
    const [meta] = (await this.admin.fetchTopicMetadata({ topics: [topic] })).topics;
    if (!meta) return this.ensureCommandTopic(agentId, partitions);
    if (meta.partitions.length >= partitions) return;
    try {
      await this.admin.createPartitions({ topicPartitions: [{ topic, count: partitions }] });
    } catch (err) {
      // Another replica grew it first.
      if ((err as { type?: string }).type !== INVALID_PARTITIONS) throw err;
    }
  }

  async publish(record: AgentRecord): Promise<void> {
    await this.producer.send({
      topic: this.opts.topics.cards(),
      acks: -1,
      messages: [
        {
          key: record.id,
          value: JSON.stringify(record),
          headers: { tenant: record.tenant, agent_id: record.id, 'content-type': 'application/json' },
        },
      ],
    });
  }

  async publishHeartbeat(heartbeat: AgentHeartbeat): Promise<void> {
    await this.producer.send({
      topic: this.opts.topics.heartbeats(),
      acks: -1,
      messages: [{ key: heartbeat.agentId, value: JSON.stringify(heartbeat) }],
    });
  }

  private async createTopics(
    topics: Array<{ topic: string; numPartitions: number; configEntries?: Array<{ name: string; value: string }> }>,
  ) {
    // Resolves false when one already exists (another replica, another service, an earlier start):
    // then its leaders are awaited for the partitions it has, whatever count it was created with.
    const created = await this.admin.createTopics({
      waitForLeaders: false,
      topics: topics.map((t) => ({ ...t, replicationFactor: this.opts.replicationFactor })),
    });
    for (const t of topics) await awaitTopicLeaders(this.admin, t.topic, created ? t.numPartitions : 1);
  }
}
