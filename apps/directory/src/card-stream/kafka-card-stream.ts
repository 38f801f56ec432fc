import type { Admin, Kafka, Producer } from 'kafkajs';
import { BusAdmin } from '@mesh/bus';
import { DIRECTORY_TOPICS, TopicNames, type AgentHeartbeat, type AgentRecord } from '@mesh/contract';
import type { CardStream, CardsTopicState } from './card-stream.port.js';

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

/** CardStream over kafkajs: topics through `@mesh/bus`'s BusAdmin, records through an idempotent producer. */
export class KafkaCardStream implements CardStream {
  private readonly admin: BusAdmin;
  private readonly producer: Producer;
  /** Plain kafkajs admin for what BusAdmin does not offer (cluster id, topic list, end offsets). */
  private readonly inspector: Admin;
  private inspectorConnected?: Promise<void>;

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaCardStreamOptions,
  ) {
    this.admin = new BusAdmin(opts.adminKafka ?? kafka);
    this.inspector = (opts.adminKafka ?? kafka).admin();
    // Idempotent producer: a retried send never duplicates or reorders records of one key.
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  }

  /** Connects and creates the shared topics (DIRECTORY_TOPICS is the one definition every service uses). */
  async start(): Promise<void> {
    await this.producer.connect();
    await this.ensureSharedTopics();
  }

  async stop(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined);
    await this.admin.close();
    if (this.inspectorConnected) await this.inspector.disconnect().catch(() => undefined);
  }

  async ensureSharedTopics(): Promise<void> {
    const replicationFactor = this.opts.replicationFactor;
    await this.admin.ensureTopic(this.opts.topics.cards(), { ...DIRECTORY_TOPICS.cards, replicationFactor, grow: false });
    await this.admin.ensureTopic(this.opts.topics.heartbeats(), { ...DIRECTORY_TOPICS.heartbeats, replicationFactor, grow: false });
  }

  async missingCommandTopics(agentIds: string[]): Promise<string[]> {
    const existing = new Set(await (await this.inspect()).listTopics());
    return agentIds.filter((id) => !existing.has(this.opts.topics.commands(id)));
  }

  async cardsTopicState(): Promise<CardsTopicState> {
    const admin = await this.inspect();
    const { clusterId } = await admin.describeCluster();
    const topic = this.opts.topics.cards();
    if (!(await admin.listTopics()).includes(topic)) return { clusterId, endOffsets: null };
    const offsets = await admin.fetchTopicOffsets(topic);
    const endOffsets: number[] = [];
    for (const o of offsets) endOffsets[o.partition] = Number(o.high);
    return { clusterId, endOffsets };
  }

  private async inspect(): Promise<Admin> {
    this.inspectorConnected ??= this.inspector.connect().catch((err: unknown) => {
      this.inspectorConnected = undefined;
      throw err;
    });
    await this.inspectorConnected;
    return this.inspector;
  }

  async ensureCommandTopic(agentId: string, partitions: number): Promise<void> {
    await this.admin.ensureTopic(this.opts.topics.commands(agentId), { partitions, replicationFactor: this.opts.replicationFactor });
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
}
