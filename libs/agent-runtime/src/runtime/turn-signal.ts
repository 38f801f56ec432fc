import { deadlineTimerMs, MeshError } from '@mesh/contract';
import type { LeaseKeeper } from './lease-keeper.js';

/** Why a turn was stopped before its handler returned. */
export type TurnAbortCode = 'CANCELLED' | 'DEADLINE_EXCEEDED' | 'LEASE_LOST' | 'REVOKED';

/** The reason of an aborted turn signal. */
export type TurnAbortReason = MeshError & { readonly code: TurnAbortCode };

const messages: Record<TurnAbortCode, string> = {
  CANCELLED: 'the task was canceled',
  DEADLINE_EXCEEDED: 'the deadline passed',
  LEASE_LOST: 'another worker took this execution over',
  REVOKED: 'this worker no longer owns the command',
};

/**
 * The one signal a turn's handler and tool calls see. It aborts, with the first reason that
 * arrives, when the lease is lost or given up or a renewal finds a cancel (from construction on)
 * and, while `watch` is in effect, when the task is canceled, the command revoked or the deadline
 * passes.
 */
export class TurnSignal {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal = this.controller.signal;

  constructor(private readonly lease: LeaseKeeper) {
    lease.watch({ lost: (reason) => this.abort(reason.code), canceled: () => this.abort('CANCELLED') });
  }

  abort(code: TurnAbortCode): void {
    if (!this.signal.aborted) this.controller.abort(new MeshError(code, messages[code]) as TurnAbortReason);
  }

  /** The reason once aborted. */
  get reason(): TurnAbortReason | undefined {
    return this.signal.aborted ? (this.signal.reason as TurnAbortReason) : undefined;
  }

  /**
   * Follows `cancel`, `revoked` (which also gives the lease up) and the deadline until the returned
   * function is called. A source that already fired counts: abort events do not replay.
   */
  watch(cancel: AbortSignal, revoked: AbortSignal, deadlineUnixMs: number | undefined): () => void {
    const onCancel = () => this.abort('CANCELLED');
    const onRevoked = () => this.lease.giveUp();
    cancel.addEventListener('abort', onCancel, { once: true });
    revoked.addEventListener('abort', onRevoked, { once: true });
    if (revoked.aborted) onRevoked();
    // A deadline further away than a timer can wait arms none (a longer delay would fire at once).
    const deadlineMs = deadlineTimerMs(deadlineUnixMs);
    const timer = deadlineMs === undefined ? undefined : setTimeout(() => this.abort('DEADLINE_EXCEEDED'), deadlineMs);
    return () => {
      clearTimeout(timer);
      cancel.removeEventListener('abort', onCancel);
      revoked.removeEventListener('abort', onRevoked);
    };
  }
}
