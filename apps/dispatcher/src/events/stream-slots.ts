/**
 * Open A2A streams (SendStreamingMessage, SubscribeToTask) counted per tenant on this replica.
 * `reserve` takes a slot for one stream; the release it returns gives it back (idempotent), and
 * the caller calls it however the stream ends (client gone, task settled, error).
 */
export interface StreamSlots {
  /** A slot for one stream of the tenant, or undefined when the tenant has none left. */
  reserve(tenant: string): (() => void) | undefined;
  /** Streams of the tenant open now. */
  open(tenant: string): number;
}

/** At most `maxPerTenant` open streams per tenant (per replica: the fleet allows replicas × that). */
export class TenantStreamSlots implements StreamSlots {
  private readonly counts = new Map<string, number>();

  constructor(readonly maxPerTenant: number) {}

  reserve(tenant: string): (() => void) | undefined {
    const n = this.counts.get(tenant) ?? 0;
    if (n >= this.maxPerTenant) return undefined;
    this.counts.set(tenant, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(tenant) ?? 1) - 1;
      if (left > 0) this.counts.set(tenant, left);
      else this.counts.delete(tenant);
    };
  }

  open(tenant: string): number {
    return this.counts.get(tenant) ?? 0;
  }
}
