import type { BusAdmin, KafkaBusTransport } from '@mesh/bus';
import type { AgentLag } from '@mesh/contract';
import type { MeshMetrics } from '@mesh/telemetry';
import type { EffectEntry, EffectLedger } from '@mesh/tool-gateway';
import { PeriodicTask } from '@mesh/service';

/** One agent's command consumer as operations see it. */
export interface WorkerView {
  agentId: string;
  groupId: string;
  /** What `/metrics` calls its group: the group id, or the agent's alias when it is not public. */
  seriesGroup: string;
  topic: string;
  /** Its consumer's gauges and counters; undefined until the consumer started. */
  stats: () => ReturnType<KafkaBusTransport['stats']>;
  inFlight: () => number;
}

/** What {@link OpsSampler} samples and where it records it. */
export interface OpsSamplerOptions {
  admin: BusAdmin;
  workers: () => WorkerView[];
  ledger: EffectLedger;
  metrics: MeshMetrics;
  intervalMs: number;
}

/** `mcp__billing__issue_refund` → server `billing`, tool `issue_refund`. */
export function splitToolName(name: string): { server: string; tool: string } {
  const m = /^mcp__(.+?)__(.+)$/.exec(name);
  return m ? { server: m[1]!, tool: m[2]! } : { server: '', tool: name };
}

/**
 * Samples what Prometheus cannot see from inside a handler: consumer lag (committed offset to
 * high watermark, from the broker), in-flight and paused partitions per consumer group, and the
 * open unknown outcomes by tool. Runs on an interval and on demand (the ops endpoints).
 */
export class OpsSampler {
  private readonly schedule: PeriodicTask;
  private lastUnknownLabels = new Set<string>();

  constructor(private readonly opts: OpsSamplerOptions) {
    // The broker may be briefly away: a failed sample is dropped, the next one tries again.
    this.schedule = new PeriodicTask(() => this.sample(), { intervalMs: opts.intervalMs, firstDelayMs: 0 });
  }

  start(): void {
    this.schedule.start();
  }

  async stop(): Promise<void> {
    await this.schedule.stop();
  }

  /**
   * Lag of every agent's group, for `/ops` (the dispatcher publishes it as `mesh_consumer_lag`:
   * it runs while the workers are scaled to zero, and every replica here would report the same
   * partitions again).
   */
  async lag(): Promise<AgentLag[]> {
    const out: AgentLag[] = [];
    for (const w of this.opts.workers()) {
      const reports = await this.opts.admin.consumerLag(w.groupId, [w.topic]);
      const lag = reports.reduce((n, r) => n + r.lag, 0);
      out.push({
        agentId: w.agentId,
        groupId: w.groupId,
        topic: w.topic,
        lag,
        partitions: reports.map((r) => ({ partition: r.partition, lag: r.lag, committed: r.committed, highWatermark: r.highWatermark })),
      });
    }
    return out;
  }

  /** Open unknown outcomes (oldest first), also recorded as `mesh_unknown_outcomes_open` by tool. */
  async unknowns(limit = 1000): Promise<EffectEntry[]> {
    const entries = await this.opts.ledger.listUnknown(limit);
    const counts = new Map<string, number>();
    for (const e of entries) counts.set(e.tool, (counts.get(e.tool) ?? 0) + 1);
    // Tools that had unknowns and have none now go to 0 rather than disappearing.
    for (const tool of this.lastUnknownLabels) if (!counts.has(tool)) counts.set(tool, 0);
    for (const [name, n] of counts) this.opts.metrics.unknownOutcomesOpen.set(splitToolName(name), n);
    this.lastUnknownLabels = new Set([...counts].filter(([, n]) => n > 0).map(([t]) => t));
    return entries;
  }

  async sample(): Promise<void> {
    for (const w of this.opts.workers()) {
      const s = w.stats();
      if (!s) continue; // the sampler starts before the consumers do
      this.opts.metrics.inFlight.set({ group: w.seriesGroup }, s.inFlight);
      this.opts.metrics.pausedPartitions.set({ group: w.seriesGroup }, s.pausedPartitions);
    }
    await this.unknowns();
  }
}
