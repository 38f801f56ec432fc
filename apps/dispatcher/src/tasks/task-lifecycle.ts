import type { AgentRecord } from '@mesh/contract';
import { PeriodicTask } from '@mesh/service';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { SweepTurn } from '../fleet/sweep-lease.js';
import type { ExpiredTask, TaskEndings } from './task-endings.js';

export interface TaskLifecycleOptions {
  /** How long after a task's deadline its worker's own report may still arrive before the platform fails it. */
  deadlineGraceMs: number;
  /** Settled tasks are deleted this long after their last change; 0 keeps them forever. */
  retentionMs: number;
  /** Pause between sweeps. */
  sweepMs: number;
  /** Whether this replica sweeps (one replica of the fleet does). */
  sweeps: SweepTurn;
  /** Tasks per statement (default 100); a sweep repeats while batches come back full. */
  batch?: number;
  /** The service's logger (lines carry `src: task-lifecycle`). */
  logger?: Logger;
}

/**
 * The two ends of a task's life the API never touches (docs/contract.md §4, lifecycle): a task whose
 * deadline passed with no result from its worker is failed explicitly, and settled tasks leave
 * the store after the retention period. Runs on the replica holding the sweep lease; the statements
 * would share the work between replicas all the same.
 */
export class TaskLifecycle {
  private readonly schedule: PeriodicTask;
  private readonly batch: number;
  private readonly log: Logger;

  constructor(
    private readonly tasks: Pick<TaskEndings, 'failOverdue' | 'deleteSettled'>,
    private readonly agentOf: (agentId: string, tenant: string) => AgentRecord | undefined,
    private readonly opts: TaskLifecycleOptions,
    /** Told of each task failed here, after the commit (streams, metrics; waking the relay and push). */
    private readonly expired: (t: ExpiredTask) => void,
  ) {
    this.batch = opts.batch ?? 100;
    this.log = (opts.logger ?? silentLogger).child({ src: 'task-lifecycle' });
    this.schedule = new PeriodicTask(() => (opts.sweeps.held ? this.sweep() : Promise.resolve()), {
      intervalMs: opts.sweepMs,
      onError: (err) => this.log.warn({ err: String(err) }, 'lifecycle sweep failed; will retry'),
    });
  }

  start(): void {
    this.schedule.start();
  }

  /** One pass of both sweeps; returns how many tasks each touched. */
  async sweep(): Promise<{ expired: number; deleted: number }> {
    let expired = 0;
    for (;;) {
      const batch = await this.tasks.failOverdue(this.opts.deadlineGraceMs, this.batch, this.agentOf);
      for (const t of batch) this.expired(t);
      expired += batch.length;
      if (batch.length < this.batch) break;
    }
    let deleted = 0;
    if (this.opts.retentionMs > 0) {
      for (;;) {
        const n = await this.tasks.deleteSettled(this.opts.retentionMs, this.batch);
        deleted += n;
        if (n < this.batch) break;
      }
    }
    if (expired > 0 || deleted > 0) this.log.info({ expired, deleted }, 'lifecycle sweep');
    return { expired, deleted };
  }

  async stop(): Promise<void> {
    await this.schedule.stop();
  }
}
