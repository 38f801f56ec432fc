import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { MeshMetrics } from '@mesh/telemetry';

/**
 * Prometheus metrics of the worker process (docs/contract.md §7): the platform catalog (dedup hits, tool
 * latency, unknown outcomes, lag …) plus what only the runtime counts (turns, tool calls by outcome).
 */
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
  readonly toolCalls = new Counter({
    name: 'mesh_tool_calls_total',
    help: 'Tool calls by outcome (ok, error, unknown, replayed from the effect ledger, failed)',
    labelNames: ['agent', 'tool', 'outcome'],
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
