import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { sleep, wakeableSleep } from '@mesh/contract';
import type { DataSource, QueryRunner } from 'typeorm';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { SweepTurn } from '../fleet/sweep-lease.js';
import type { CommandProducer, OutboxCommand } from './command-producer.js';

/** A claimed command the broker will never take (too large for its topic, refused as a record). */
export interface UndeliverableCommand {
  command: OutboxCommand;
  /** What the broker or the size check said. */
  error: string;
}

/**
 * Ends what depends on commands that can never be produced, inside the relay's claim transaction
 * (`q`), so the rows go only with their tasks' ends; `done` runs after the commit (TaskCommits).
 */
export interface UndeliverableHandler {
  settle(q: QueryRunner, commands: UndeliverableCommand[]): Promise<{ done(): void }>;
}

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
  /** Ends the tasks of commands the broker refuses for good (default: the rows are only dropped, and logged). */
  undeliverable?: UndeliverableHandler;
  /** Counts commands dropped as undeliverable, by envelope kind. */
  counted?: (kind: string, n: number) => void;
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

  /** Who ends the tasks of undeliverable commands (set once the task side exists: it also wakes this relay). */
  handleUndeliverable(handler: UndeliverableHandler): void {
    this.opts.undeliverable = handler;
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

  /**
   * One batch; returns how many commands were taken from the outbox. A command the broker refuses
   * for what it is (too large for its topic) is sent once more alone — in a batch a neighbour may
   * have been the one refused — and, refused again, leaves the outbox with its task ended FAILED
   * (`undeliverable`): no row ever holds the others back. Any other failure rolls the claim back
   * and the batch is retried (workers absorb the re-sent commands by execution id).
   */
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
      let after: { done(): void } | undefined;
      if (rows.length > 0) {
        // RETURNING does not promise the subquery's order; commands keep their accept order.
        rows.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
        const commands = rows.map((r) => ({ topic: r.topic, key: r.key, headers: r.headers, value: r.value, agentId: r.agent_id }));
        const undeliverable = await this.produce(commands);
        if (undeliverable.length > 0) after = await this.settle(q, undeliverable);
      }
      await q.commitTransaction();
      after?.done();
      return rows.length;
    } catch (err) {
      await q.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await q.release();
    }
  }

  /** Produces `commands`; returns those refused for good, throws when any other failed. */
  private async produce(commands: OutboxCommand[]): Promise<UndeliverableCommand[]> {
    const outcomes = await this.producer.send(commands);
    const failed = outcomes.flatMap((o, i) => (o.ok ? [] : [{ command: commands[i], ...o }]));
    const passing = failed.find((f) => !f.refused);
    if (passing) throw new Error(`${failed.length} of ${commands.length} commands were not acknowledged: ${passing.error}`);
    if (failed.length === 0 || commands.length === 1) return failed.map(({ command, error }) => ({ command, error }));
    const undeliverable: UndeliverableCommand[] = [];
    for (const f of failed) undeliverable.push(...(await this.produce([f.command])));
    return undeliverable;
  }

  private async settle(q: QueryRunner, undeliverable: UndeliverableCommand[]): Promise<{ done(): void } | undefined> {
    for (const u of undeliverable)
      this.log.error(
        { topic: u.command.topic, taskId: u.command.headers.task_id, kind: u.command.headers.kind, err: u.error },
        'a command can never be delivered: dropped, its task failed',
      );
    const kinds = new Map<string, number>();
    for (const u of undeliverable)
      kinds.set(u.command.headers.kind ?? 'unknown', (kinds.get(u.command.headers.kind ?? 'unknown') ?? 0) + 1);
    const after = await this.opts.undeliverable?.settle(q, undeliverable);
    return {
      done: () => {
        for (const [kind, n] of kinds) this.opts.counted?.(kind, n);
        after?.done();
      },
    };
  }

  /** Stops after the current batch. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }
}
