import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of the worker process (DESIGN.md §7). */
export class AgentsMetrics {
  readonly registry = new Registry();
  readonly turns = new Counter({
    name: 'mesh_agent_turns_total',
    help: 'Turns finished, by agent and final state',
    labelNames: ['agent', 'state'],
    registers: [this.registry],
  });
  readonly dedupHits = new Counter({
    name: 'mesh_agent_dedup_hits_total',
    help: 'Redelivered commands answered from the execution ledger instead of running again',
    labelNames: ['agent'],
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: 'mesh_tool_calls_total',
    help: 'Tool calls by outcome (ok, error, unknown, replayed from the effect ledger, failed)',
    labelNames: ['agent', 'tool', 'outcome'],
    registers: [this.registry],
  });
  readonly toolLatency = new Histogram({
    name: 'mesh_tool_call_seconds',
    help: 'Tool call latency including the wait for a server slot',
    labelNames: ['agent', 'tool'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly unknownOutcomes = new Gauge({
    name: 'mesh_tool_unknown_outcomes',
    help: 'Side-effecting tool calls whose outcome is unknown and not yet reconciled',
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'mesh_agent_turns_in_flight',
    help: 'Turns running now in this process',
    labelNames: ['agent'],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
