import { ensureTopics, TopicReader, type Kafka } from '@mesh/bus';
import type { AgentHeartbeat, TopicDefinition } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { LivenessService } from './liveness.service.js';

/** Parses a heartbeat value; malformed ones are skipped (a heartbeat is advisory, never dead-lettered). */
export function parseHeartbeat(value: Buffer | null): AgentHeartbeat | undefined {
  if (!value) return undefined;
  try {
    const v = JSON.parse(value.toString('utf8')) as Partial<AgentHeartbeat>;
    if (typeof v.agentId !== 'string' || typeof v.atUnixMs !== 'number' || !Number.isFinite(v.atUnixMs)) return undefined;
    const ttlMs = typeof v.ttlMs === 'number' && v.ttlMs > 0 && v.ttlMs <= 3_600_000 ? Math.round(v.ttlMs) : 0;
    return { agentId: v.agentId, workerId: String(v.workerId ?? ''), atUnixMs: v.atUnixMs, ttlMs };
  } catch {
    return undefined;
  }
}

/**
 * Creates the heartbeats topic when missing (never grown: keyed by agent). The directory alone
 * creates it, here: workers and the directory's HTTP heartbeat forward write it, this module and
 * the dispatchers' catalogs read it. Called at start, before the HTTP API takes heartbeats, and by
 * the card reconciler when it finds the cluster lost the directory's topics.
 */
export function ensureHeartbeatsTopic(kafka: Kafka, topic: TopicDefinition): Promise<void> {
  return ensureTopics(kafka, [topic]);
}

/**
 * Consumes the heartbeats topic in one consumer group shared by all directory replicas (the state
 * lives in Postgres, so each heartbeat needs applying once), a batch per database round trip.
 */
export class HeartbeatConsumer {
  private readonly reader: TopicReader;

  constructor(
    kafka: Kafka,
    topic: TopicDefinition,
    groupId: string,
    private readonly liveness: LivenessService,
    logger: Logger = silentLogger,
  ) {
    this.reader = new TopicReader(kafka, {
      topic: topic.name,
      group: groupId,
      commits: 'per-batch',
      consumerConfig: { sessionTimeout: 10_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 250 },
      logger: logger.child({ src: 'heartbeat-consumer' }),
    });
  }

  /** Joins the group and starts applying heartbeats; the topic exists ({@link ensureHeartbeatsTopic} at start). */
  async start(): Promise<void> {
    await this.reader.start({
      eachBatch: async ({ messages }) => {
        const beats = messages.map((m) => parseHeartbeat(m.value)).filter((b): b is AgentHeartbeat => b !== undefined);
        await this.liveness.record(beats);
      },
    });
  }

  stop(): Promise<void> {
    return this.reader.stop();
  }
}
