import { BusAdmin, BusProducer, type Admin, type Kafka } from '@mesh/bus';
import type { AgentHeartbeat, AgentRecord, TopicDefinitions, TopicNames } from '@mesh/contract';
import type { CardStream, CardsTopicState } from './card-stream.port.js';

/** Options of the Kafka card stream. */
export interface KafkaCardStreamOptions {
  /** Topic names and settings (the deployment's replication factor among them). */
  definitions: TopicDefinitions;
  /**
   * Client for admin calls. Polling a just-created topic makes kafkajs log each transient
   * "unknown topic" at error level; a quiet client here keeps that out of the logs (failures
   * still throw and are reported by the caller).
   */
  adminKafka?: Kafka;
}

/** CardStream over kafkajs: topics through `@mesh/bus`'s BusAdmin, records through its BusProducer. */
export class KafkaCardStream implements CardStream {
  private readonly admin: BusAdmin;
  private readonly producer: BusProducer;
  /** Plain kafkajs admin for what BusAdmin does not offer (cluster id, topic list, end offsets). */
  private readonly inspector: Admin;
  private inspectorConnected?: Promise<void>;
  private readonly topics: TopicNames;

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaCardStreamOptions,
  ) {
    this.topics = opts.definitions.names;
    this.admin = new BusAdmin(opts.adminKafka ?? kafka);
    this.inspector = (opts.adminKafka ?? kafka).admin();
    // Idempotent, acks=all, and a send resolves only once its partition's leader acknowledged it:
    // the card outbox deletes a row on that promise (kafkajs alone can resolve a send it never
    // wrote when leadership moves; see BusProducer).
    this.producer = new BusProducer(kafka);
  }

  /** Connects and creates the cards topic (`TopicDefinitions` is the one definition every service uses). */
  async start(): Promise<void> {
    await this.producer.connect();
    await this.ensureCardsTopic();
  }

  async stop(): Promise<void> {
    await this.producer.disconnect();
    await this.admin.close();
    if (this.inspectorConnected) await this.inspector.disconnect().catch(() => undefined);
  }

  async ensureCardsTopic(): Promise<void> {
    const topic = this.opts.definitions.cards();
    await this.admin.ensureTopic(topic.name, topic);
  }

  async missingCommandTopics(agentIds: string[]): Promise<string[]> {
    const existing = new Set(await (await this.inspect()).listTopics());
    return agentIds.filter((id) => !existing.has(this.topics.commands(id)));
  }

  async cardsTopicState(): Promise<CardsTopicState> {
    const admin = await this.inspect();
    const { clusterId } = await admin.describeCluster();
    const topic = this.topics.cards();
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
    // The directory owns the agent's registration, so it alone grows the topic when that asks for more.
    const topic = this.opts.definitions.commands(agentId, partitions);
    await this.admin.ensureTopic(topic.name, { ...topic, grow: true });
  }

  async publish(record: AgentRecord): Promise<void> {
    await this.producer.sendRecord(this.topics.cards(), record.id, JSON.stringify(record), {
      tenant: record.tenant,
      agent_id: record.id,
      'content-type': 'application/json',
    });
  }

  async publishHeartbeat(heartbeat: AgentHeartbeat): Promise<void> {
    await this.producer.sendRecord(this.topics.heartbeats(), heartbeat.agentId, JSON.stringify(heartbeat));
  }
}
