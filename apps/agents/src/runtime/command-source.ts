import type { Consumer, Kafka } from 'kafkajs';
import { decodeEnvelope, type Envelope } from '@mesh/contract';
import { SemaphoreSlotSupplier } from '@mesh/tool-gateway';

/** Delivers envelopes of one topic; `start` resolves once consuming, `stop` drains in-flight work. */
export interface CommandSource {
  start(handler: (envelope: Envelope) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export interface KafkaCommandSourceOptions {
  groupId: string;
  topic: string;
  /** Messages in flight at once across partitions; when reached, fetching waits (the partition is effectively paused). */
  maxInFlight: number;
  sessionTimeoutMs?: number;
  log?: (entry: Record<string, unknown>) => void;
}

/** In-flight offsets of one partition within one assignment epoch. */
class PartitionOffsets {
  private readonly inFlight = new Set<bigint>();
  private highest = -1n;
  private committed = -1n;

  add(offset: bigint): void {
    this.inFlight.add(offset);
    if (offset > this.highest) this.highest = offset;
  }

  /** Marks `offset` done; returns the offset to commit (lowest still in flight, or highest + 1) when it advanced. */
  done(offset: bigint): bigint | undefined {
    this.inFlight.delete(offset);
    let next = this.highest + 1n;
    for (const o of this.inFlight) if (o < next) next = o;
    if (next <= this.committed) return undefined;
    this.committed = next;
    return next;
  }
}

/**
 * A minimal at-least-once parallel consumer over kafkajs: messages of a partition run concurrently
 * (a cancel must reach the run it cancels), and the committed offset only moves past a message once
 * every message below it is done. Work from an older assignment epoch never commits.
 * TODO(bus): replace with @mesh/bus BusConsumer once it lands; the interface is the same shape.
 */
export class KafkaCommandSource implements CommandSource {
  private consumer?: Consumer;
  private readonly slots: SemaphoreSlotSupplier;
  private readonly partitions = new Map<number, PartitionOffsets>();
  private epoch = 0;
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly kafka: Kafka,
    private readonly o: KafkaCommandSourceOptions,
  ) {
    this.slots = new SemaphoreSlotSupplier(o.maxInFlight);
  }

  async start(handler: (envelope: Envelope) => Promise<void>): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.o.groupId,
      sessionTimeout: this.o.sessionTimeoutMs ?? 10000,
      heartbeatInterval: Math.min(3000, Math.floor((this.o.sessionTimeoutMs ?? 10000) / 3)),
      maxWaitTimeInMs: 100,
      retry: { retries: 8 },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      // A new assignment: offsets tracked so far belong to the old epoch and must not be committed.
      this.epoch++;
      this.partitions.clear();
    });
    await consumer.connect();
    await consumer.subscribe({ topic: this.o.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 8,
      eachMessage: async ({ topic, partition, message }) => {
        const slot = await this.slots.reserve();
        const epoch = this.epoch;
        let offsets = this.partitions.get(partition);
        if (!offsets) this.partitions.set(partition, (offsets = new PartitionOffsets()));
        const offset = BigInt(message.offset);
        offsets.add(offset);
        const work = (async () => {
          try {
            let envelope: Envelope;
            try {
              envelope = decodeEnvelope({ headers: message.headers, value: message.value });
            } catch (err) {
              this.o.log?.({
                level: 'error',
                msg: 'undecodable command skipped',
                topic,
                partition,
                offset: message.offset,
                error: String(err),
              });
              return;
            }
            await this.withRetries(() => handler(envelope), { topic, partition, offset: message.offset });
          } finally {
            slot.release();
            if (epoch === this.epoch) {
              const commit = offsets.done(offset);
              if (commit !== undefined) {
                await consumer.commitOffsets([{ topic, partition, offset: commit.toString() }]).catch((err: unknown) => {
                  this.o.log?.({ level: 'warn', msg: 'offset commit failed', partition, error: String(err) });
                });
              }
            }
          }
        })();
        this.running.add(work);
        void work.finally(() => this.running.delete(work));
      },
    });
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    await consumer.stop().catch(() => undefined);
    await Promise.allSettled([...this.running]);
    await consumer.disconnect().catch(() => undefined);
  }

  /** Infrastructure failures (database, broker) are retried with backoff; the handler itself turns agent errors into outcomes. */
  private async withRetries(fn: () => Promise<void>, where: Record<string, unknown>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= 5) {
          this.o.log?.({ level: 'error', msg: 'command failed after retries; skipped', ...where, error: String(err) });
          return;
        }
        await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
      }
    }
  }
}
