import { setMaxListeners } from 'node:events';
import { FinishedOffsets } from './finished-offsets.js';
import { OffsetTracker } from './offset-tracker.js';

/** A commit of one partition: the offset and what finished above it (see FinishedOffsets). */
export interface CommitMark {
  offset: number;
  metadata: string | null;
  /** `tracker.completed` when the mark was taken. */
  completed: number;
}

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
  private committedMetadata: string | null = null;
  private committedAt = -1;
  /**
   * Offsets the previous owner finished above its commit, skipped on arrival; undefined until read
   * at the assignment's first batch, null when there is nothing to skip.
   */
  restored?: FinishedOffsets | null;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly epoch: number,
  ) {
    // Every running handler of the partition may listen to this one signal.
    setMaxListeners(0, this.abort.signal);
  }

  /**
   * The commit worth making now: when the commit point moved, or (with `maxMetadataChars` > 0)
   * when what finished above it changed.
   */
  pendingCommit(maxMetadataChars: number): CommitMark | undefined {
    const offset = this.tracker.committable();
    const completed = this.tracker.completed;
    if (offset === undefined || offset < this.committed) return undefined;
    if (offset === this.committed && (maxMetadataChars <= 0 || completed === this.committedAt)) return undefined;
    const metadata = maxMetadataChars > 0 ? FinishedOffsets.encode(offset, this.tracker.finishedAbove(), maxMetadataChars) : null;
    if (offset === this.committed && metadata === this.committedMetadata) return undefined;
    return { offset, metadata, completed };
  }

  /** Records a successful commit (commits of one consumer run one after another). */
  committedTo(mark: CommitMark): void {
    if (mark.offset < this.committed) return;
    this.committed = mark.offset;
    this.committedMetadata = mark.metadata;
    this.committedAt = mark.completed;
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
