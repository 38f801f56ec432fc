/**
 * The in-flight budget behind a reserve/release interface: a global limit and an optional
 * per-tenant limit, so one tenant's flood cannot take every slot of a shared consumer. A slot
 * taken without a tenant counts against the global limit only.
 */
export class InFlightSlots {
  private total = 0;
  private readonly byTenant = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly perTenantLimit = Infinity,
  ) {
    if (!(limit >= 1)) throw new RangeError(`in-flight limit must be at least 1, got ${limit}`);
    if (!(perTenantLimit >= 1)) throw new RangeError(`per-tenant in-flight limit must be at least 1, got ${perTenantLimit}`);
  }

  /** True while any slot is free. */
  get hasRoom(): boolean {
    return this.total < this.limit;
  }

  /** True when a slot is free for this tenant. */
  canReserve(tenant: string | undefined): boolean {
    return this.total < this.limit && (tenant === undefined || (this.byTenant.get(tenant) ?? 0) < this.perTenantLimit);
  }

  /** Takes a slot; false (and nothing taken) when the global or the tenant's budget is spent. */
  tryReserve(tenant: string | undefined): boolean {
    if (!this.canReserve(tenant)) return false;
    this.total++;
    if (tenant !== undefined) this.byTenant.set(tenant, (this.byTenant.get(tenant) ?? 0) + 1);
    return true;
  }

  release(tenant: string | undefined): void {
    if (tenant === undefined) {
      if (this.total <= 0) throw new Error('no slot held');
      this.total--;
      return;
    }
    const n = this.byTenant.get(tenant) ?? 0;
    if (n <= 0) throw new Error(`no slot held by tenant ${tenant}`);
    if (n === 1) this.byTenant.delete(tenant);
    else this.byTenant.set(tenant, n - 1);
    this.total--;
  }

  get inFlight(): number {
    return this.total;
  }

  /** In-flight count per tenant (tenants with none are absent). */
  perTenant(): Record<string, number> {
    return Object.fromEntries(this.byTenant);
  }
}
