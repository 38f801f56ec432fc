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
 * Consumes the heartbeats topic in one consumer group shared by all directory replicas (the state
 * lives in Postgres, so each heartbeat needs applying once), a batch per database round trip.
 */
export class HeartbeatConsumer {
  private readonly reader: TopicReader;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: TopicDefinition,
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

  /** Creates the heartbeats topic when missing, joins the group and starts applying heartbeats. */
  async start(): Promise<void> {
    // The directory owns the topic: its card stream created it at start, unless another stream was given.
    await ensureTopics(this.kafka, [this.topic]);
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
