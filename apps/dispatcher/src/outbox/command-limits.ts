import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '@mesh/bus';
import { PeriodicTask } from '@mesh/service';
import { silentLogger, type Logger } from '@mesh/telemetry';

/** Where {@link CommandLimits} learns the broker's limits (`BusAdmin.maxMessageBytes`). */
export interface RecordLimitSource {
  /** `max.message.bytes` of the topic; of the broker (`message.max.bytes`) for a topic that does not exist yet. */
  maxMessageBytes(topic?: string): Promise<number>;
}

export interface CommandLimitsOptions {
  /** How often the limits known here are read again (an operator may change a topic's). */
  refreshMs: number;
  logger?: Logger;
}

/**
 * The largest command each command topic takes, as the broker says, known without a round trip
 * on the accept path: the broker's own default is read at start, a topic's own value on its first
 * use and then periodically. Until the broker answered, Kafka's documented default stands in. A
 * limit lowered by an operator between two reads is caught by the relay, which fails the task of
 * a record the broker refuses (OutboxRelay).
 */
export class CommandLimits {
  private brokerDefault = KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
  private readonly byTopic = new Map<string, number>();
  private readonly asked = new Set<string>();
  private readonly schedule: PeriodicTask;
  private readonly log: Logger;

  constructor(
    private readonly source: RecordLimitSource,
    opts: CommandLimitsOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'command-limits' });
    this.schedule = new PeriodicTask(() => this.refresh(), {
      intervalMs: opts.refreshMs,
      firstDelayMs: 0,
      onError: (err) => this.log.info({ err: String(err) }, 'cannot read the broker limits yet; will retry'),
    });
  }

  start(): void {
    this.schedule.start();
  }

  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /** The most bytes a record batch of one command to `topic` may take (see `recordBatchBytes`). */
  limitOf(topic: string): number {
    const known = this.byTopic.get(topic);
    if (known !== undefined) return known;
    // Bounded by the agents the dispatcher serves; read in the background, the default meanwhile.
    if (!this.asked.has(topic)) this.reread(topic);
    return this.brokerDefault;
  }

  /** Reads a topic's limit again soon (first use, or a record its known limit allowed was refused). */
  reread(topic: string): void {
    this.asked.add(topic);
    this.readTopic(topic).catch((err: unknown) => this.log.info({ topic, err: String(err) }, 'cannot read a topic limit yet'));
  }

  /** Reads the broker's default and every topic's limit known here again. */
  async refresh(): Promise<void> {
    this.brokerDefault = await this.source.maxMessageBytes();
    // One topic that cannot be read keeps its last known limit; the others are read all the same.
    const failed: string[] = [];
    for (const topic of this.asked) await this.readTopic(topic).catch(() => failed.push(topic));
    if (failed.length > 0) this.log.info({ topics: failed }, "cannot read these topics' limits yet; will retry");
  }

  private async readTopic(topic: string): Promise<void> {
    this.byTopic.set(topic, await this.source.maxMessageBytes(topic));
  }
}
