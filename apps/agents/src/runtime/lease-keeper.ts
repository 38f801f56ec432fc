import { MeshError } from '@mesh/contract';
import type { ExecutionLedger } from './execution-ledger.js';

/** Why this attempt no longer owns its execution. */
export type LeaseLossCode = 'LEASE_LOST' | 'REVOKED';

export interface LeaseKeeperOptions {
  ledger: Pick<ExecutionLedger, 'renew'>;
  executionId: string;
  owner: string;
  leaseMs: number;
}

/**
 * Holds the lease of one claimed execution: renews it every third of its length from construction
 * until `stop()`. `lost` aborts (reason: a MeshError coded LEASE_LOST) when a renewal finds another
 * owner, `canceled` when it finds a cancel another process recorded (the cancel command was read
 * there). A failed renewal is retried on the next tick; the lease covers a few misses.
 */
export class LeaseKeeper {
  private readonly lostController = new AbortController();
  private readonly canceledController = new AbortController();
  private readonly timer: NodeJS.Timeout;
  /** Aborted when this attempt no longer owns the execution: its lease was taken, or it was handed away (`giveUp`). */
  readonly lost: AbortSignal = this.lostController.signal;
  readonly canceled: AbortSignal = this.canceledController.signal;
  readonly executionId: string;

  constructor(private readonly o: LeaseKeeperOptions) {
    this.executionId = o.executionId;
    this.timer = setInterval(() => this.renew(), Math.max(50, Math.floor(o.leaseMs / 3)));
  }

  /** This attempt gives the execution up (its command was revoked): `lost` aborts with REVOKED. */
  giveUp(): void {
    this.markLost('REVOKED', 'this worker no longer owns the command');
  }

  /** Renews no more; call it before releasing the lease so no renewal in flight takes it back. */
  stop(): void {
    clearInterval(this.timer);
  }

  private renew(): void {
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
