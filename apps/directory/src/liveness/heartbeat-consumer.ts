import { ensureTopics, runSupervised, type Consumer, type Kafka } from '@mesh/bus';
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
  private readonly consumer: Consumer;
  private readonly log: Logger;
  private stopped = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: TopicDefinition,
    groupId: string,
    private readonly liveness: LivenessService,
    logger: Logger = silentLogger,
  ) {
    this.consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 250 });
    this.log = logger.child({ src: 'heartbeat-consumer' });
  }

  /** Creates the heartbeats topic when missing, joins the group and starts applying heartbeats. */
  async start(): Promise<void> {
    // Maybe created by another service first: `TopicDefinitions` is the one definition.
    await ensureTopics(this.kafka, [this.topic]);
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic.name, fromBeginning: false });
    await runSupervised(
      this.consumer,
      {
        eachBatchAutoResolve: true,
        eachBatch: async ({ batch }) => {
          const beats = batch.messages.map((m) => parseHeartbeat(m.value)).filter((b): b is AgentHeartbeat => b !== undefined);
          await this.liveness.record(beats);
        },
      },
      { stopping: () => this.stopped, report: (err, what) => this.log.error({ err: String(err) }, what) },
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.consumer.disconnect().catch(() => undefined);
  }
}
