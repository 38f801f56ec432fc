/** How the `tenant` and `agent` labels of per-tenant series are bounded. */
export interface LabelBoundsOptions {
  /** False: every series carries `tenant="_all"` (the per-tenant split is opt-out for operators who do not want it). */
  tenantLabels?: boolean;
  /**
   * Distinct (tenant, agent) pairs that get series of their own; later pairs are counted under
   * `tenant="_other", agent="_other"`. Any tenant can register agents, so without a bound one
   * tenant could grow the time-series database without limit.
   */
  maxTenantAgentPairs?: number;
}

export const ALL_TENANTS = '_all';
export const OTHER = '_other';

/**
 * Maps the `tenant` and `agent` labels of a sample to bounded values: the first pairs seen keep
 * their names (per process: every replica sees the busy pairs first), the rest share one overflow
 * series, so the number of series stays fixed whatever tenants register.
 */
export class LabelBounds {
  private readonly pairs = new Set<string>();
  private readonly tenantLabels: boolean;
  private readonly max: number;

  constructor(o: LabelBoundsOptions = {}) {
    this.tenantLabels = o.tenantLabels ?? true;
    this.max = o.maxTenantAgentPairs ?? 500;
  }

  apply<L extends Partial<Record<string, string | number>>>(labels: L): L {
    if (!('tenant' in labels) && !('agent' in labels)) return labels;
    const tenant = this.tenantLabels ? String(labels.tenant ?? '') : ALL_TENANTS;
    const pair = `${tenant}\u0000${String(labels.agent ?? '')}`;
    if (this.pairs.has(pair)) return { ...labels, ...(this.tenantLabels ? {} : { tenant: ALL_TENANTS }) };
    if (this.pairs.size < this.max) {
      this.pairs.add(pair);
      return { ...labels, ...(this.tenantLabels ? {} : { tenant: ALL_TENANTS }) };
    }
    return { ...labels, ...('tenant' in labels ? { tenant: OTHER } : {}), ...('agent' in labels ? { agent: OTHER } : {}) };
  }
}
