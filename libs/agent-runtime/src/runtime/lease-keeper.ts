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

/** Told what a renewal found: the first loss (once), a cancel recorded elsewhere (once). */
export interface LeaseWatcher {
  lost(reason: MeshError & { code: LeaseLossCode }): void;
  canceled(): void;
}

/**
 * Holds the lease of one claimed execution: renews it every third of its length from construction
 * until `stop()` (on its own timer, or as part of a shared {@link LeaseRenewals} loop). `lost` aborts (reason: a MeshError coded LEASE_LOST) when a renewal finds another
 * owner, `canceled` when it finds a cancel another process recorded (the cancel command was read
 * there). A failed renewal is retried on the next tick; the lease covers a few misses.
 *
 * The two signals are made when first asked for: a turn follows its lease through `watch`, and
 * most turns end without anything reading them (an AbortSignal per lease and per turn in flight
 * was a measurable part of a worker's cost per turn).
 */
export class LeaseKeeper {
  private lossReason?: MeshError & { code: LeaseLossCode };
  private cancelFound = false;
  private lostController?: AbortController;
  private canceledController?: AbortController;
  private watcher?: LeaseWatcher;
  private readonly timer?: NodeJS.Timeout;
  private stopped = false;
  readonly executionId: string;

  constructor(private readonly o: LeaseKeeperOptions) {
    this.executionId = o.executionId;
    if (o.renewals) o.renewals.add(this);
    else this.timer = setInterval(() => this.renewNow(), Math.max(50, Math.floor(o.leaseMs / 3)));
  }

  /** Whether this attempt no longer owns the execution. */
  get isLost(): boolean {
    return this.lossReason !== undefined;
  }

  /** Aborted when this attempt no longer owns the execution: its lease was taken, or it was handed away (`giveUp`). */
  get lost(): AbortSignal {
    if (!this.lostController) {
      this.lostController = new AbortController();
      if (this.lossReason) this.lostController.abort(this.lossReason);
    }
    return this.lostController.signal;
  }

  /** Aborted when a renewal found a cancel recorded by another process. */
  get canceled(): AbortSignal {
    if (!this.canceledController) {
      this.canceledController = new AbortController();
      if (this.cancelFound) this.canceledController.abort();
    }
    return this.canceledController.signal;
  }

  /** Follows this lease (one watcher): told at once of a loss or cancel already found. */
  watch(watcher: LeaseWatcher): void {
    this.watcher = watcher;
    if (this.lossReason) watcher.lost(this.lossReason);
    if (this.cancelFound) watcher.canceled();
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
        if (renewal === 'canceled') this.markCanceled();
      },
      () => undefined,
    );
  }

  private markCanceled(): void {
    if (this.cancelFound) return;
    this.cancelFound = true;
    this.canceledController?.abort();
    this.watcher?.canceled();
  }

  private markLost(code: LeaseLossCode, message: string): void {
    if (this.lossReason) return;
    const reason = new MeshError(code, message) as MeshError & { code: LeaseLossCode };
    this.lossReason = reason;
    this.lostController?.abort(reason);
    this.watcher?.lost(reason);
  }
}
