import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { sleep, wakeableSleep } from '@mesh/contract';
import type { DataSource, QueryRunner } from 'typeorm';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { SweepTurn } from '../fleet/sweep-lease.js';
import type { CommandProducer, OutboxCommand } from './command-producer.js';

/** A row of `dispatcher.outbox` as a claim returns it. */
interface OutboxRow {
  id: string;
  topic: string;
  key: string;
  headers: Record<string, string>;
  value: string;
  agent_id: string;
  created_at: Date;
}

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
  /** How long the commands of a topic that does not exist are left out of claims before it is looked for again (default 5 s). */
  absentTopicRetryMs?: number;
}

/**
 * Moves committed outbox rows to Kafka: claim and delete a batch (SKIP LOCKED, so replicas share
 * the work), produce it, commit. If Kafka is down the rows stay and are retried with backoff (and
 * only once Kafka answers again); a crash between produce and commit re-produces them, which
 * workers absorb by execution id. No row holds the others back: one the broker refuses for good
 * leaves with its task failed, and the rows of a topic that does not exist wait for it outside
 * the claims (docs/dispatcher.md, "Commands the broker must take").
 */
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  private kicked = false;
  private failures = 0;
  private readonly log: Logger;
  /** Topics that did not exist at the last send, and until when their commands stay out of claims. */
  private readonly absent = new Map<string, number>();

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
      // Commands of a topic that does not exist wait for it without holding the others back.
      const claimed = await q.query(
        `DELETE FROM dispatcher.outbox WHERE id IN (
           SELECT id FROM dispatcher.outbox WHERE NOT (topic = ANY($2::text[])) ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, topic, key, headers, value, agent_id, created_at`,
        [this.opts.batchSize, this.absentTopics()],
        true, // a structured result: TypeORM answers a bare DELETE with [rows, count]
      );
      const rows = claimed.records as OutboxRow[];
      let after: { done(): void } | undefined;
      let waiting = 0;
      if (rows.length > 0) {
        // RETURNING does not promise the subquery's order; commands keep their accept order.
        rows.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
        const commands = rows.map((r) => ({ topic: r.topic, key: r.key, headers: r.headers, value: r.value, agentId: r.agent_id }));
        const { undeliverable, absent } = await this.produce(commands);
        if (absent.size > 0) waiting = await this.putBack(q, rows, absent);
        if (undeliverable.length > 0) after = await this.settle(q, undeliverable);
      }
      await q.commitTransaction();
      after?.done();
      return rows.length - waiting;
    } catch (err) {
      await q.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await q.release();
    }
  }

  /**
   * Produces `commands`; returns those refused for good and the topics that do not exist (their
   * commands were not sent); throws when any other failed.
   */
  private async produce(commands: OutboxCommand[]): Promise<{ undeliverable: UndeliverableCommand[]; absent: Set<string> }> {
    const outcomes = await this.producer.send(commands);
    const absent = new Set<string>();
    const failed: Array<{ command: OutboxCommand; error: string }> = [];
    for (const [i, o] of outcomes.entries()) {
      if (o.ok) continue;
      if ('absentTopic' in o) absent.add(commands[i].topic);
      else if (!o.refused) throw new Error(`commands were not acknowledged: ${o.error}`);
      else failed.push({ command: commands[i], error: o.error });
    }
    if (failed.length === 0 || commands.length === 1) return { undeliverable: failed, absent };
    const undeliverable: UndeliverableCommand[] = [];
    for (const f of failed) undeliverable.push(...(await this.produce([f.command])).undeliverable);
    return { undeliverable, absent };
  }

  /** Topics whose commands stay out of claims for now (see {@link putBack}). */
  private absentTopics(): string[] {
    const now = Date.now();
    for (const [topic, until] of this.absent) if (until <= now) this.absent.delete(topic);
    return [...this.absent.keys()];
  }

  /**
   * Returns the claimed commands of topics that do not exist to the outbox, under their own ids
   * (their order stays), and leaves those topics out of claims for a while: an agent's topic is
   * created by the directory when it registers, and again by its reconciler if the cluster lost it.
   */
  private async putBack(q: QueryRunner, rows: OutboxRow[], absent: Set<string>): Promise<number> {
    const back = rows.filter((r) => absent.has(r.topic));
    await q.query(
      `INSERT INTO dispatcher.outbox (id, topic, key, headers, value, agent_id, created_at)
       SELECT id, topic, key, headers, value, agent_id, created_at FROM jsonb_to_recordset($1::jsonb)
         AS r(id bigint, topic text, key text, headers jsonb, value text, agent_id text, created_at timestamptz)`,
      [JSON.stringify(back)],
    );
    const until = Date.now() + (this.opts.absentTopicRetryMs ?? 5000);
    for (const topic of absent) {
      if (!this.absent.has(topic))
        this.log.warn(
          { topic, commands: back.filter((r) => r.topic === topic).length },
          'command topic does not exist: its commands wait for it',
        );
      this.absent.set(topic, until);
    }
    return back.length;
  }

  private async settle(q: QueryRunner, undeliverable: UndeliverableCommand[]): Promise<{ done(): void } | undefined> {
    for (const u of undeliverable)
      this.log.error(
        { topic: u.command.topic, taskId: u.command.headers.task_id, kind: u.command.headers.kind, err: u.error },
        'a command can never be delivered: dropped, its task failed',
      );
    const kinds = new Map<string, number>();
    for (const { command } of undeliverable) {
      const kind = command.headers.kind ?? 'unknown';
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
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
