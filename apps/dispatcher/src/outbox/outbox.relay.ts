import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { sleep, wakeableSleep } from '@mesh/contract';
import type { DataSource } from 'typeorm';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { SweepTurn } from '../fleet/sweep-lease.js';
import type { CommandProducer } from './command-producer.js';

export interface OutboxRelayOptions {
  batchSize: number;
  /** Poll interval when idle (accepts also wake the relay directly). */
  idleMs: number;
  /** Whether this replica's idle polls claim rows (another replica's, left when it died). */
  sweeps: SweepTurn;
  /** After a wake-up, wait this long so one batch carries the commands of concurrent accepts. */
  lingerMs?: number;
  maxBackoffMs: number;
  /** The service's logger (lines carry `src: outbox-relay`). */
  logger?: Logger;
}

/**
 * Moves committed outbox rows to Kafka: claim and delete a batch (SKIP LOCKED, so replicas share
 * the work), produce it, commit. If Kafka is down the rows stay and are retried with backoff (and
 * only once Kafka answers again); a crash between produce and commit re-produces them, which
 * workers absorb by execution id.
 */
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  private kicked = false;
  private failures = 0;
  private readonly log: Logger;

  constructor(
    private readonly ds: DataSource,
    private readonly producer: CommandProducer,
    private readonly opts: OutboxRelayOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'outbox-relay' });
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  onApplicationBootstrap(): void {
    this.start();
  }

  /** After the HTTP server and the projector closed: nothing commits commands any more. */
  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  /** Something was committed: drain now instead of at the next poll. */
  kick(): void {
    if (this.kicked) return;
    this.kicked = true;
    this.wake?.();
  }

  private sleep(ms: number): Promise<void> {
    return wakeableSleep(ms, (wake) => (this.wake = wake));
  }

  private async run(): Promise<void> {
    // The first pass drains what this replica left when it last stopped; later ones drain what it
    // was woken for, what is left of a full batch, and (under the sweep lease) anyone's rows.
    let idle = false;
    while (this.running) {
      let moved: number;
      if (idle && !this.kicked && this.failures === 0 && !this.opts.sweeps.held) {
        await this.sleep(this.opts.idleMs);
        continue;
      }
      try {
        // After a failed send, claim nothing until Kafka answers again: a claim transaction stays
        // open for as long as its send takes, which during an outage is the client's whole retry.
        if (this.failures > 0) await this.producer.ready();
        if (this.kicked && this.opts.lingerMs) await sleep(this.opts.lingerMs);
        this.kicked = false;
        moved = await this.drainOnce();
        if (this.failures > 0) this.log.info({ after: this.failures }, 'delivering again');
        this.failures = 0;
      } catch (err) {
        this.failures += 1;
        if (this.failures === 1 || this.failures % 10 === 0)
          this.log.warn({ failures: this.failures, err: String(err) }, 'cannot deliver commands yet; will retry');
        await this.sleep(Math.min(this.opts.maxBackoffMs, 100 * 2 ** Math.min(this.failures, 10)));
        continue;
      }
      idle = moved === 0 && !this.kicked;
      if (idle && this.running) await this.sleep(this.opts.idleMs);
    }
  }

  /** One batch; returns how many commands were produced. */
  async drainOnce(): Promise<number> {
    const q = this.ds.createQueryRunner();
    await q.connect();
    await q.startTransaction();
    try {
      // Claimed and deleted in one statement; the delete only counts if the produce succeeds
      // (otherwise the transaction rolls back and the rows stay).
      const claimed = await q.query(
        `DELETE FROM dispatcher.outbox WHERE id IN (
           SELECT id FROM dispatcher.outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, topic, key, headers, value, agent_id`,
        [this.opts.batchSize],
        true, // a structured result: TypeORM answers a bare DELETE with [rows, count]
      );
      const rows = claimed.records as Array<{
        id: string;
        topic: string;
        key: string;
        headers: Record<string, string>;
        value: string;
        agent_id: string;
      }>;
      if (rows.length > 0) {
        // RETURNING does not promise the subquery's order; commands keep their accept order.
        rows.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
        await this.producer.send(
          rows.map((r) => ({ topic: r.topic, key: r.key, headers: r.headers, value: r.value, agentId: r.agent_id })),
        );
      }
      await q.commitTransaction();
      return rows.length;
    } catch (err) {
      await q.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await q.release();
    }
  }

  /** Stops after the current batch. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }
}
