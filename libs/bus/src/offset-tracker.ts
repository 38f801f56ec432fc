/**
 * Tracks the offsets of one partition from receipt to completion, so the consumer commits only
 * up to the lowest offset not yet finished (Parallel Consumer's "highest contiguous completed + 1").
 * Work may finish in any order; a crash then re-delivers only unfinished work (and whatever
 * finished beyond it, which the handlers' idempotency absorbs).
 */
export class OffsetTracker {
  /** Received offsets in ascending order; `head` skips the finished prefix without shifting. */
  private pending: number[] = [];
  private head = 0;
  private readonly finished = new Set<number>();
  private last = -1;
  private completions = 0;

  /** Registers a received offset; offsets must arrive in ascending order (gaps are fine). */
  add(offset: number): void {
    if (offset <= this.last) throw new RangeError(`offset ${offset} is not above the last received ${this.last}`);
    this.pending.push(offset);
    this.last = offset;
  }

  /** Marks a received offset as finished. */
  complete(offset: number): void {
    if (offset > this.last || offset < (this.pending[this.head] ?? Infinity) || this.finished.has(offset)) {
      throw new RangeError(`offset ${offset} is not outstanding`);
    }
    this.finished.add(offset);
    this.completions++;
    while (this.head < this.pending.length && this.finished.delete(this.pending[this.head])) this.head++;
    // Compact now and then so the array does not grow with the partition's history.
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
  }

  /** The offset to commit: the lowest unfinished one, or one past the last received; undefined before any. */
  committable(): number | undefined {
    if (this.last < 0) return undefined;
    return this.head < this.pending.length ? this.pending[this.head] : this.last + 1;
  }

  /** Finished offsets above the commit point (the lowest unfinished one), in no particular order. */
  finishedAbove(): Iterable<number> {
    return this.finished.values();
  }

  /** Completions so far: unchanged means neither the commit point nor {@link finishedAbove} moved. */
  get completed(): number {
    return this.completions;
  }

  /** Highest offset received so far (-1 before any). */
  get lastReceived(): number {
    return this.last;
  }

  /** Received offsets not yet finished. */
  get unfinished(): number {
    return this.pending.length - this.head - this.finished.size;
  }

  /** True when `offset` was received and is not finished yet. */
  isOutstanding(offset: number): boolean {
    return offset <= this.last && offset >= (this.pending[this.head] ?? Infinity) && !this.finished.has(offset);
  }
}
