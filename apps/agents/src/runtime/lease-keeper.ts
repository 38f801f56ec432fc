import { MeshError } from '@mesh/contract';
import type { ExecutionLedger } from './execution-ledger.js';

/** Why this attempt no longer owns its execution. */
export type LeaseLossCode = 'LEASE_LOST' | 'REVOKED';

export interface LeaseKeeperOptions {
  ledger: Pick<ExecutionLedger, 'renew'>;
  executionId: string;
  owner: string;
  leaseMs: number;
  /**
   * The shared renewal loop to join (one timer, and with a batching ledger one statement, for all
   * the leases of a runner); without it the keeper runs a timer of its own.
   */
  renewals?: LeaseRenewals;
}

/**
 * One renewal loop for many leases: every `intervalMs` it renews each lease it holds. The calls
 * are issued together, so a ledger that groups statements (PostgresExecutionLedger) renews all
 * the leases of a worker's turns in flight in one statement, instead of one timer and one
 * statement per turn. The timer runs only while it holds a lease.
 */
export class LeaseRenewals {
  private readonly keepers = new Set<LeaseKeeper>();
  private timer?: NodeJS.Timeout;

  /** `intervalMs`: a third of the lease, so a lease survives a missed renewal or two. */
  constructor(private readonly intervalMs: number) {}

  /** Leases held now. */
  get size(): number {
    return this.keepers.size;
  }

  add(keeper: LeaseKeeper): void {
    this.keepers.add(keeper);
    this.timer ??= setInterval(() => {
      for (const k of this.keepers) k.renewNow();
    }, this.intervalMs);
  }

  delete(keeper: LeaseKeeper): void {
    this.keepers.delete(keeper);
    if (this.keepers.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/**
 * Holds the lease of one claimed execution: renews it every third of its length from construction
 * until `stop()` (on its own timer, or as part of a shared {@link LeaseRenewals} loop). `lost` aborts (reason: a MeshError coded LEASE_LOST) when a renewal finds another
 * owner, `canceled` when it finds a cancel another process recorded (the cancel command was read
 * there). A failed renewal is retried on the next tick; the lease covers a few misses.
 */
export class LeaseKeeper {
  private readonly lostController = new AbortController();
  private readonly canceledController = new AbortController();
  private readonly timer?: NodeJS.Timeout;
  private stopped = false;
  /** Aborted when this attempt no longer owns the execution: its lease was taken, or it was handed away (`giveUp`). */
  readonly lost: AbortSignal = this.lostController.signal;
  readonly canceled: AbortSignal = this.canceledController.signal;
  readonly executionId: string;

  constructor(private readonly o: LeaseKeeperOptions) {
    this.executionId = o.executionId;
    if (o.renewals) o.renewals.add(this);
    else this.timer = setInterval(() => this.renewNow(), Math.max(50, Math.floor(o.leaseMs / 3)));
  }

  /** This attempt gives the execution up (its command was revoked): `lost` aborts with REVOKED. */
  giveUp(): void {
    this.markLost('REVOKED', 'this worker no longer owns the command');
  }

  /** Renews no more; call it before releasing the lease so no renewal in flight takes it back. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.o.renewals?.delete(this);
  }

  /** Renews once now (the timer's or the shared loop's tick). */
  renewNow(): void {
    if (this.stopped) return;
    this.o.ledger.renew(this.o.executionId, this.o.owner, this.o.leaseMs).then(
      (renewal) => {
        if (renewal === 'lost') this.markLost('LEASE_LOST', 'another worker took this execution over');
        if (renewal === 'canceled' && !this.canceled.aborted) this.canceledController.abort();
      },
      () => undefined,
    );
  }

  private markLost(code: LeaseLossCode, message: string): void {
    if (!this.lost.aborted) this.lostController.abort(new MeshError(code, message));
  }
}
