/** A per-key rate limit: `take` spends one unit or says how long to wait. */
export interface RateLimiter {
  /** 0 when allowed; otherwise the seconds to wait before retrying. */
  take(key: string): number;
}

/**
 * Token bucket per key (tenant), in memory: the limit holds per replica, which is what protects
 * this replica's database pool; a fleet-wide quota would need shared state.
 */
export class TokenBucketLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    private readonly capacity: number,
    perMinute: number,
    private readonly now: () => number = Date.now,
    /** Keys kept before full buckets (the same as none) are dropped: callers may name many keys. */
    private readonly maxKeys = 10_000,
  ) {
    this.perMs = perMinute / 60_000;
  }

  take(key: string): number {
    const t = this.now();
    if (this.buckets.size >= this.maxKeys && !this.buckets.has(key)) this.dropFull(t);
    const b = this.buckets.get(key) ?? { tokens: this.capacity, at: t };
    b.tokens = Math.min(this.capacity, b.tokens + (t - b.at) * this.perMs);
    b.at = t;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1000));
  }

  /** How many keys are tracked (a full bucket may still be among them until the next sweep). */
  get size(): number {
    return this.buckets.size;
  }

  private dropFull(t: number): void {
    for (const [key, b] of this.buckets) if (b.tokens + (t - b.at) * this.perMs >= this.capacity) this.buckets.delete(key);
  }
}
