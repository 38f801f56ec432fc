import { BusAdmin, BusProducer, isRecordRefusedError, recordBatchBytes, type Kafka } from '@mesh/bus';
import type { OutboxCommand } from './outbox-command.js';
export type { OutboxCommand } from './outbox-command.js';

/**
 * What became of one command of a send: acknowledged, or refused by the broker for what it is
 * (`refused`: sent again it would be refused again), or not sent for a passing reason.
 */
export type SendOutcome =
  | { ok: true }
  | { ok: false; refused: boolean; error: string }
  /** Its topic does not exist (yet): the command waits in the outbox for the topic's owner, the directory. */
  | { ok: false; refused: false; absentTopic: true; error: string };

/** Where the outbox relay delivers commands. */
export interface CommandProducer {
  /**
   * One outcome per command, in order; resolves once each is acknowledged (acks from all in-sync
   * replicas) or failed. Rejects only when nothing could be tried (the broker unreachable).
   */
  send(commands: OutboxCommand[]): Promise<SendOutcome[]>;
  /** Resolves once Kafka answers a metadata request (nothing is produced); rejects while it does not. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The relay's producer on `@mesh/bus`: traces each command as part of the request that wrote it.
 * A command its topic's limit (`limitOf`) rules out is refused here, unsent; one whose topic does
 * not exist is not sent (`absentTopic`): command topics are the directory's, created when an agent
 * registers and again by its reconciler when the cluster lost them, never here.
 */
export class BusCommandProducer implements CommandProducer {
  private producer: BusProducer;
  private readonly admin: BusAdmin;
  /** Topics seen to exist: a command topic is deleted only with its agent. */
  private readonly existing = new Set<string>();

  constructor(
    private readonly kafka: Kafka,
    /** The largest record batch a command topic takes (CommandLimits). */
    private readonly limitOf: (topic: string) => number = () => Number.POSITIVE_INFINITY,
    /** Told of a topic that refused a record its known limit allowed: the limit changed (CommandLimits.reread). */
    private readonly refusedBy: (topic: string) => void = () => undefined,
  ) {
    this.producer = this.newProducer();
    this.admin = new BusAdmin(kafka);
  }

  private newProducer(): BusProducer {
    // The relay lingers before it claims a batch; the producer need not linger again.
    return new BusProducer(this.kafka, { lingerMs: 0, spanPerRecord: true });
  }

  async send(commands: OutboxCommand[]): Promise<SendOutcome[]> {
    if (commands.some((c) => !this.existing.has(c.topic))) {
      // Sent to a missing topic, a record would be retried by the client for its whole retry
      // budget, holding up every other command of the batch.
      for (const t of await this.admin.listTopics()) this.existing.add(t);
    }
    const producer = this.producer;
    let sendFailed = false;
    const outcomes = await Promise.all(
      commands.map(async (c): Promise<SendOutcome> => {
        if (!this.existing.has(c.topic)) return { ok: false, refused: false, absentTopic: true, error: `topic ${c.topic} does not exist` };
        const bytes = recordBatchBytes(c.key, c.value, c.headers);
        const limit = this.limitOf(c.topic);
        if (bytes > limit)
          return { ok: false, refused: true, error: `the command takes ${bytes} bytes; its topic accepts at most ${limit}` };
        try {
          await producer.sendRecord(c.topic, c.key, c.value, c.headers);
          return { ok: true };
        } catch (err) {
          sendFailed = true;
          const refused = isRecordRefusedError(err);
          if (refused) this.refusedBy(c.topic);
          // Deleted since it was seen? The next send looks for it again.
          else this.existing.delete(c.topic);
          return { ok: false, refused, error: String(err) };
        }
      }),
    );
    if (sendFailed && producer === this.producer) {
      // kafkajs (2.2.x) advances an idempotent producer's sequence numbers only for a request that
      // fully succeeded: after a partly refused one the partitions that took their records answer
      // every later send OUT_OF_ORDER_SEQUENCE_NUMBER. A new producer (a new producer id) starts clean.
      this.producer = this.newProducer();
      void producer.disconnect().catch(() => undefined);
    }
    return outcomes;
  }

  ready(): Promise<void> {
    return this.admin.ping();
  }

  async close(): Promise<void> {
    await Promise.all([this.producer.disconnect(), this.admin.close()]);
  }
}
