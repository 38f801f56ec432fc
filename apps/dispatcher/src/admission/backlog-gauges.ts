import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { BusAdmin } from '@mesh/bus';
import { PeriodicTask } from '@mesh/service';
import { privateAgentAlias, type MeshMetrics } from '@mesh/telemetry';

export interface BacklogGaugesOptions {
  /** Every agent to report (the catalog's active agents). */
  agents: () => string[];
  groupOf: (agentId: string) => string;
  topicOf: (agentId: string) => string;
  /** The dead-letter topic of a command topic. */
  deadLettersOf: (topic: string) => string;
  intervalMs: number;
  /** Agents that get series of their own (in id order); the rest are reported together under `_other`. */
  maxAgents: number;
}

/** The label values one agent is reported under. */
interface AgentSeries {
  agent: string;
  group: string;
  topic: string;
  deadLetters: string;
}

/** The label every overflow series carries (as LabelBounds does for tenant × agent series). */
const OTHER = '_other';

/**
 * Publishes each agent's command backlog from the broker: `mesh_consumer_lag` (its most-behind
 * partition) per workers' group and topic, `mesh_agent_backlog` (all partitions) per agent, and the
 * depth of its dead-letter topic — a fixed number of series per agent, never per partition (the
 * partitions are on `/ops/lag`), at most `maxAgents` agents named, non-public agents under an alias,
 * and the series of an agent dropped once it is no longer registered. The dispatcher does it, not
 * the workers: it runs while an agent's workers are scaled to zero (when the backlog matters most);
 * every dispatcher replica reports the same broker value, so dashboards and alerts combine replicas
 * with `max`, never `sum`.
 */
export class BacklogGauges implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly schedule: PeriodicTask;
  /** The series each reported agent has now, by agent id (`_other` for the overflow). */
  private reported = new Map<string, AgentSeries>();

  constructor(
    private readonly admin: BusAdmin,
    private readonly metrics: MeshMetrics,
    private readonly opts: BacklogGaugesOptions,
  ) {
    // The broker may be briefly away: a failed sample is dropped, the next one tries again.
    this.schedule = new PeriodicTask(() => this.sample(), { intervalMs: opts.intervalMs, firstDelayMs: 0 });
  }

  /** A non-public agent goes by its alias (MeshMetrics.agentLabel) in every label, group and topic included. */
  private seriesOf(agentId: string): AgentSeries {
    if (this.metrics.agentLabel(agentId) === agentId) {
      const topic = this.opts.topicOf(agentId);
      return { agent: agentId, group: this.opts.groupOf(agentId), topic, deadLetters: this.opts.deadLettersOf(topic) };
    }
    const alias = privateAgentAlias(agentId);
    return { agent: alias, group: alias, topic: alias, deadLetters: `${alias}.dlq` };
  }

  async sample(): Promise<void> {
    const ids = [...new Set(this.opts.agents())].sort();
    const named = ids.slice(0, this.opts.maxAgents);
    const current = new Map<string, AgentSeries>();
    const other = { lag: 0, backlog: 0, deadLetters: 0, seen: false };
    for (const agentId of ids) {
      const topic = this.opts.topicOf(agentId);
      // An agent whose command topic does not exist yet has nothing waiting; skip it, not the rest.
      const reports = await this.admin.consumerLag(this.opts.groupOf(agentId), [topic]).catch(() => undefined);
      const kept = this.reported.get(agentId);
      if (!reports) {
        if (kept) current.set(agentId, kept);
        continue;
      }
      const lag = reports.reduce((m, r) => Math.max(m, r.lag), 0);
      const backlog = reports.reduce((n, r) => n + r.lag, 0);
      const deadLetters = await this.admin.recordCount(this.opts.deadLettersOf(topic));
      if (named.length < ids.length && !named.includes(agentId)) {
        other.lag = Math.max(other.lag, lag);
        other.backlog += backlog;
        other.deadLetters += deadLetters;
        other.seen = true;
        continue;
      }
      const s = this.seriesOf(agentId);
      this.set(s, lag, backlog, deadLetters);
      current.set(agentId, s);
    }
    if (other.seen) {
      const s = { agent: OTHER, group: OTHER, topic: OTHER, deadLetters: OTHER };
      this.set(s, other.lag, other.backlog, other.deadLetters);
      current.set(OTHER, s);
    }
    // Agents retired (or now under another name): their series go.
    for (const [agentId, s] of this.reported) {
      const now = current.get(agentId);
      if (now && now.agent === s.agent) continue;
      this.metrics.consumerLag.remove({ group: s.group, topic: s.topic });
      this.metrics.agentLag.remove({ agent: s.agent });
      this.metrics.deadLetterDepth.remove({ topic: s.deadLetters });
    }
    this.reported = current;
  }

  private set(s: AgentSeries, lag: number, backlog: number, deadLetters: number): void {
    this.metrics.consumerLag.set({ group: s.group, topic: s.topic }, lag);
    this.metrics.agentLag.set({ agent: s.agent }, backlog);
    this.metrics.deadLetterDepth.set({ topic: s.deadLetters }, deadLetters);
  }

  onApplicationBootstrap(): void {
    this.schedule.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.schedule.stop();
    await this.admin.close();
  }
}
