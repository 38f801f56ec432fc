import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { MeshMetrics } from '@mesh/telemetry';

/** Prometheus metrics of the worker process (DESIGN.md §7). */
export class AgentsMetrics {
  /** The platform-wide catalog (lag, unknown outcomes, in-flight, paused partitions …), served on the same /metrics. */
  readonly mesh = new MeshMetrics({ defaultMetrics: false });
  readonly own = new Registry();
  readonly registry: Registry;
  readonly turns = new Counter({
    name: 'mesh_agent_turns_total',
    help: 'Turns finished, by agent and final state',
    labelNames: ['agent', 'state'],
    registers: [this.own],
  });
  readonly dedupHits = new Counter({
    name: 'mesh_agent_dedup_hits_total',
    help: 'Redelivered commands answered from the execution ledger instead of running again',
    labelNames: ['agent'],
    registers: [this.own],
  });
  readonly toolCalls = new Counter({
    name: 'mesh_tool_calls_total',
    help: 'Tool calls by outcome (ok, error, unknown, replayed from the effect ledger, failed)',
    labelNames: ['agent', 'tool', 'outcome'],
    registers: [this.own],
  });
  readonly toolLatency = new Histogram({
    name: 'mesh_tool_call_seconds',
    help: 'Tool call latency including the wait for a server slot',
    labelNames: ['agent', 'tool'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.own],
  });
  readonly unknownOutcomes = new Gauge({
    name: 'mesh_tool_unknown_outcomes',
    help: 'Side-effecting tool calls whose outcome is unknown and not yet reconciled',
    registers: [this.own],
  });
  readonly inFlight = new Gauge({
    name: 'mesh_agent_turns_in_flight',
    help: 'Turns running now in this process',
    labelNames: ['agent'],
    registers: [this.own],
  });

  /** `group`: the process's agent group (AGENTS_GROUP), label `agent_group` on every sample when set (`group` is the consumer group's). */
  constructor(group?: string) {
    collectDefaultMetrics({ register: this.own });
    this.registry = Registry.merge([this.own, this.mesh.registry]);
    if (group) this.registry.setDefaultLabels({ agent_group: group });
  }
}
