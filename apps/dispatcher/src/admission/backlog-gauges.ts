import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { BusAdmin } from '@mesh/bus';
import { PeriodicTask } from '@mesh/service';
import type { MeshMetrics } from '@mesh/telemetry';

export interface BacklogGaugesOptions {
  /** Every agent to report (the catalog's active agents). */
  agents: () => string[];
  groupOf: (agentId: string) => string;
  topicOf: (agentId: string) => string;
  /** The dead-letter topic of a command topic. */
  deadLettersOf: (topic: string) => string;
  intervalMs: number;
}

/**
 * Publishes each agent's command backlog from the broker: `mesh_consumer_lag` per partition of its
 * workers' group, `mesh_agent_backlog` per agent, and the depth of its dead-letter topic. The dispatcher does it, not the workers: it
 * runs while an agent's workers are scaled to zero (when the backlog matters most), and each
 * partition is one series per dispatcher replica — the same broker value, so dashboards and
 * alerts combine replicas with `max`, never `sum`.
 */
export class BacklogGauges implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly schedule: PeriodicTask;

  constructor(
    private readonly admin: BusAdmin,
    private readonly metrics: MeshMetrics,
    private readonly opts: BacklogGaugesOptions,
  ) {
    // The broker may be briefly away: a failed sample is dropped, the next one tries again.
    this.schedule = new PeriodicTask(() => this.sample(), { intervalMs: opts.intervalMs, firstDelayMs: 0 });
  }

  async sample(): Promise<void> {
    for (const agentId of this.opts.agents()) {
      const group = this.opts.groupOf(agentId);
      const topic = this.opts.topicOf(agentId);
      // An agent whose command topic does not exist yet has nothing waiting; skip it, not the rest.
      const reports = await this.admin.consumerLag(group, [topic]).catch(() => undefined);
      if (!reports) continue;
      let total = 0;
      for (const r of reports) {
        this.metrics.consumerLag.set({ group, topic: r.topic, partition: String(r.partition) }, r.lag);
        total += r.lag;
      }
      this.metrics.agentLag.set({ agent: agentId }, total);
      const dlq = this.opts.deadLettersOf(topic);
      this.metrics.deadLetterDepth.set({ topic: dlq }, await this.admin.recordCount(dlq));
    }
  }

  onApplicationBootstrap(): void {
    this.schedule.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.schedule.stop();
    await this.admin.close();
  }
}
