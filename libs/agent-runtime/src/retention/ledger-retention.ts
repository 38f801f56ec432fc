import { PeriodicTask } from '@mesh/service';
import { SETTLED_TURN_STATES } from '@mesh/agent-sdk';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { SqlRunner } from '@mesh/database';

export interface LedgerRetentionOptions {
  /** Ledger rows of a task are deleted this long after its last turn finished; 0 keeps them forever. */
  retentionMs: number;
  /** Pause between sweeps. */
  sweepMs: number;
  /** Tasks per statement (default 100); a sweep repeats while batches come back full. */
  batch?: number;
  /** The service's logger (lines carry `src: ledger-retention`). */
  logger?: Logger;
}

/** What one sweep deleted. */
export interface LedgerSweep {
  tasks: number;
  executions: number;
  effects: number;
  cancellations: number;
}

/**
 * Keeps the execution and effect ledgers from growing for good. A task's rows go together, and
 * only once nothing can need them again: its last turn finished with a settled outcome (an
 * INPUT_REQUIRED task may be continued, and a later turn's identical tool call must still find its
 * recorded effect) longer than the retention ago, and none of its effects is pending or unknown
 * (an unknown side effect waits for the reconciler, however old). Cancels are deleted after the
 * retention whether or not a run came. Safe only while the retention is longer than the command
 * topics' (a redelivered command whose execution row is gone would run again): the agents check
 * that at start. Runs in every process; the statements share the work.
 */
export class LedgerRetention {
  private readonly schedule: PeriodicTask;
  private readonly batch: number;
  private readonly log: Logger;

  constructor(
    private readonly sql: SqlRunner,
    private readonly opts: LedgerRetentionOptions,
  ) {
    this.batch = opts.batch ?? 100;
    this.log = (opts.logger ?? silentLogger).child({ src: 'ledger-retention' });
    this.schedule = new PeriodicTask(() => this.sweep(), {
      intervalMs: opts.sweepMs,
      onError: (err) => this.log.warn({ error: String(err) }, 'ledger retention sweep failed; will retry'),
    });
  }

  start(): void {
    if (this.opts.retentionMs > 0) this.schedule.start();
  }

  /** One pass: deletes in batches until a batch comes back short. */
  async sweep(): Promise<LedgerSweep> {
    const total: LedgerSweep = { tasks: 0, executions: 0, effects: 0, cancellations: 0 };
    for (;;) {
      const n = await this.deleteBatch();
      for (const k of Object.keys(total) as Array<keyof LedgerSweep>) total[k] += n[k];
      if (n.tasks < this.batch && n.cancellations < this.batch) break;
    }
    if (total.tasks > 0 || total.cancellations > 0) this.log.info(total, 'ledger retention sweep');
    return total;
  }

  private async deleteBatch(): Promise<LedgerSweep> {
    const rows = (await this.sql.query(
      `WITH done AS (
         SELECT l.tenant, l.task_id FROM agents.executions l
         WHERE l.state = 'finished' AND l.finished_at < now() - $1 * interval '1 millisecond' AND l.final_state = ANY($3)
           AND NOT EXISTS (SELECT 1 FROM agents.executions n WHERE n.tenant = l.tenant AND n.task_id = l.task_id AND n.turn > l.turn)
           AND NOT EXISTS (SELECT 1 FROM agents.tool_effects f
                           WHERE f.tenant = l.tenant AND f.task_id = l.task_id AND f.state IN ('pending', 'unknown'))
         ORDER BY l.finished_at
         LIMIT $2
         FOR UPDATE OF l SKIP LOCKED),
       e AS (DELETE FROM agents.executions x USING done WHERE x.tenant = done.tenant AND x.task_id = done.task_id RETURNING 1),
       f AS (DELETE FROM agents.tool_effects x USING done WHERE x.tenant = done.tenant AND x.task_id = done.task_id RETURNING 1),
       c AS (
         DELETE FROM agents.cancellations x
         WHERE x.execution_id IN (
           SELECT execution_id FROM agents.cancellations
           WHERE requested_at < now() - $1 * interval '1 millisecond' ORDER BY requested_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT (SELECT count(*)::int FROM done) AS tasks, (SELECT count(*)::int FROM e) AS executions,
              (SELECT count(*)::int FROM f) AS effects, (SELECT count(*)::int FROM c) AS cancellations`,
      [this.opts.retentionMs, this.batch, SETTLED_TURN_STATES],
    )) as LedgerSweep[];
    return rows[0];
  }

  async stop(): Promise<void> {
    await this.schedule.stop();
  }
}
