import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type LabelValues } from 'prom-client';
import { agentLabel, type PublicAgents } from './agent-labels.js';
import { LabelBounds, type LabelBoundsOptions } from './label-bounds.js';

type Labels = Partial<Record<string, string | number>>;

/**
 * A counter whose label set goes through `relabel` before it is counted (agents named by alias,
 * tenant × agent pairs bounded). prom-client assigns `inc` per instance in its constructor, so the
 * relabelling wraps that function.
 */
class RelabelledCounter<T extends string> extends Counter<T> {
  constructor(config: CounterConfiguration<T>, relabel: (labels: LabelValues<T>) => LabelValues<T>) {
    super(config);
    const inc = this.inc.bind(this) as (labels?: LabelValues<T> | number, value?: number) => void;
    // Exemplars are not enabled on these counters, so an object is always a label set.
    this.inc = ((labels?: LabelValues<T> | number, value?: number) =>
      labels === undefined || typeof labels === 'number' ? inc(labels) : inc(relabel(labels), value)) as Counter<T>['inc'];
  }
}

/**
 * The platform's Prometheus metrics, one catalog per process so names and labels are defined in
 * one place. Apps record into it and expose `registry` on `GET /metrics`. Callers pass agent ids:
 * the counters labelled by agent name a non-public one by its alias ({@link agentLabel}), and
 * bound their tenant × agent pairs.
 */
export class MeshMetrics {
  readonly registry = new Registry();
  private labelBounds = new LabelBounds();
  /** Until the app says which agents are public, none is named (`/metrics` needs no token). */
  private publicAgents: PublicAgents = () => false;
  /** Aliases non-public agents, then bounds the tenant × agent pairs. */
  private readonly tenantAgent = <L extends Labels>(labels: L): L => this.labelBounds.apply(this.named(labels));
  private readonly named = <L extends Labels>(labels: L): L =>
    labels.agent === undefined ? labels : { ...labels, agent: this.agentLabel(String(labels.agent)) };
  readonly tasks = new RelabelledCounter(
    {
      name: 'mesh_tasks_total',
      help: 'Tasks (turns) by outcome: accepted, then completed, failed, canceled, rejected, input_required, auth_required',
      labelNames: ['tenant', 'agent', 'outcome'] as const,
      registers: [this.registry],
    },
    (labels) => this.tenantAgent(labels),
  );
  readonly unknownOutcomesOpen = new Gauge({
    name: 'mesh_unknown_outcomes_open',
    help: 'Side-effecting tool calls whose outcome is unknown and not yet reconciled',
    labelNames: ['server', 'tool'] as const,
    registers: [this.registry],
  });
  readonly unknownOutcomesResolved = new Counter({
    name: 'mesh_unknown_outcomes_resolved_total',
    help: 'Unknown outcomes resolved by the reconciler, by resolution',
    labelNames: ['server', 'tool', 'resolution'] as const,
    registers: [this.registry],
  });
  readonly admissionRefusals = new RelabelledCounter(
    {
      name: 'mesh_admission_refusals_total',
      help: 'New work refused before it became a task (429/503), by tenant, agent and reason',
      labelNames: ['tenant', 'agent', 'reason'] as const,
      registers: [this.registry],
    },
    (labels) => this.tenantAgent(labels),
  );
  readonly delegationsInFlight = new Gauge({
    name: 'mesh_delegations_in_flight',
    help: "Delegating turns whose parent still waits for its children (the fleet's count, from the replica that runs the sweeps; 0 on the others)",
    registers: [this.registry],
  });
  readonly delegations = new Counter({
    name: 'mesh_delegations_total',
    help: 'Delegation steps: opened waits, children started or refused, waits ended (settled, first, deadline), tasks failed unopened',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });
  readonly retryBudgetExhausted = new Counter({
    name: 'mesh_retry_budget_exhausted_total',
    help: 'Task trees failed because their shared retry budget (takeovers and tool retries across hops) was spent',
    registers: [this.registry],
  });
  readonly dedupHits = new RelabelledCounter(
    {
      name: 'mesh_dedup_hits_total',
      help: 'Duplicates absorbed, by kind (message_id, same_work: the dispatcher; execution_id, effect_key: workers) and agent',
      labelNames: ['kind', 'agent'] as const,
      registers: [this.registry],
    },
    (labels) => this.named(labels),
  );
  readonly consumerLag = new Gauge({
    name: 'mesh_consumer_lag',
    help: "Messages between the committed offset and the high watermark of the group's most-behind partition of the topic",
    labelNames: ['group', 'topic'] as const,
    // The broker's value, the same in every process that reads it: a cluster's aggregate takes one.
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly agentLag = new Gauge({
    name: 'mesh_agent_backlog',
    help: "Commands waiting per agent (its workers' group lag on its command topic)",
    labelNames: ['agent'] as const,
    // The broker's value (see consumerLag).
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'mesh_in_flight',
    help: 'Messages being processed by this consumer',
    labelNames: ['group'] as const,
    registers: [this.registry],
  });
  readonly pausedPartitions = new Gauge({
    name: 'mesh_paused_partitions',
    help: 'Partitions paused by backpressure',
    labelNames: ['group'] as const,
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'mesh_dead_letters_total',
    help: 'Messages sent to a dead-letter topic',
    labelNames: ['topic', 'reason'] as const,
    registers: [this.registry],
  });
  readonly httpRequests = new Counter({
    name: 'mesh_http_requests_total',
    help: 'HTTP requests answered, by route pattern (never the raw path) and status class',
    labelNames: ['method', 'route', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'mesh_http_request_duration_seconds',
    help: 'Time from request to the end of the response (a stream counts until it closes)',
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly deadLetterDepth = new Gauge({
    name: 'mesh_dead_letter_depth',
    help: 'Records held in a dead-letter topic (replayed ones included until retention removes them)',
    labelNames: ['topic'] as const,
    // The broker's value (see consumerLag).
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly toolLatency = new Histogram({
    name: 'mesh_tool_call_duration_seconds',
    help: 'MCP tool call latency',
    labelNames: ['server', 'tool', 'result'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly pushDeliveries = new Counter({
    name: 'mesh_push_deliveries_total',
    help: 'Push notification deliveries by result: delivered, retried, failed',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly grantsSigned = new Counter({
    name: 'mesh_grants_signed_total',
    help: 'Grants the dispatcher signed onto run commands (what a worker exchanges for tool tokens)',
    registers: [this.registry],
  });
  readonly tokenExchanges = new Counter({
    name: 'mesh_token_exchanges_total',
    help: 'Token exchanges at POST /oauth/token by outcome (issued, refused) and reason (the OAuth error code; "ok" when issued)',
    labelNames: ['outcome', 'reason'] as const,
    registers: [this.registry],
  });
  readonly eventsRefused = new Counter({
    name: 'mesh_events_refused_total',
    help: 'Agent events the dispatcher did not believe and dropped, by reason (unsigned, unknown-key, bad-signature, not-team-agent, revoked, identity-mismatch)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly undeliverableCommands = new Counter({
    name: 'mesh_outbox_undeliverable_total',
    help: 'Commands the broker refused for good (too large for their topic): dropped, their tasks failed; by envelope kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /**
   * `labels`: how the tenant × agent series are bounded (docs/operations.md, "Label cardinality");
   * `publicAgents`: see {@link namePublicAgents}.
   */
  constructor(opts: { defaultMetrics?: boolean; labels?: LabelBoundsOptions; publicAgents?: PublicAgents } = {}) {
    this.labelBounds = new LabelBounds(opts.labels);
    if (opts.publicAgents) this.publicAgents = opts.publicAgents;
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Which agents are named by id on `/metrics` (the app's registry knows; the rest go by their alias). */
  namePublicAgents(isPublic: PublicAgents): void {
    this.publicAgents = isPublic;
  }

  /** The label value of an agent on these metrics: {@link agentLabel} under this process's view of who is public. */
  agentLabel(agentId: string): string {
    return agentLabel(agentId, this.publicAgents);
  }
}
