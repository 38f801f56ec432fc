import { setMaxListeners } from 'node:events';
import { OffsetTracker } from './offset-tracker.js';

/**
 * What the consumer knows about one assigned partition during one assignment epoch. A new epoch
 * starts on every (re)assignment; work from an older epoch is stale: its completions are never
 * committed once the group has moved on.
 */
export class PartitionState {
  readonly tracker = new OffsetTracker();
  /** Aborts the in-flight handlers of this epoch when a drain runs out of time. */
  readonly abort = new AbortController();
  /** Messages received and not yet started. */
  buffered = 0;
  inFlight = 0;
  paused = false;
  /** No new work starts: the partition is being revoked, or the consumer stops. */
  revoked = false;
  /** The group rejoined since this epoch: nothing of it may be committed any more. */
  stale = false;
  /** Last offset committed by this epoch (-1 before any). */
  committed = -1;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly epoch: number,
  ) {
    // Every running handler of the partition may listen to this one signal.
    setMaxListeners(0, this.abort.signal);
  }

  /** The offset worth committing now, if it moved since the last commit. */
  pendingCommit(): number | undefined {
    const c = this.tracker.committable();
    return c !== undefined && c > this.committed ? c : undefined;
  }

  /** True when nothing of this epoch is running any more. */
  get idle(): boolean {
    return this.inFlight === 0;
  }
}

/** Map key of a topic partition. */
export function partitionId(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
