import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { AgentDefinition, McpServerSpec } from '@mesh/agent-sdk';
import {
  BusAdmin,
  BusProducer,
  countDeadLetters,
  isTransientKafkaError,
  KafkaBusTransport,
  saslFromEnv,
  type Kafka,
  type KafkaProbe,
} from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { anyTransient, ConsumerGroups, MeshError, type AgentHeartbeat, type TopicDefinitions } from '@mesh/contract';
import { isTransientPostgresError } from '@mesh/database';
import { ServiceLifecycle } from '@mesh/service';
import type { Logger } from '@mesh/telemetry';
import { GrantExchangeMinter, HmacToolTokenMinter, PostgresEffectLedger, ToolGateway, type ToolTokenMinter } from '@mesh/tool-gateway';
import type { AgentsConfig } from '../config/agents.config.js';
import type { AgentsMetrics } from '../metrics/agents.metrics.js';
import { OpsSampler, splitToolName, type WorkerView } from '../ops/ops-sampler.js';
import { LedgerRetention } from '../retention/ledger-retention.js';
import { AgentWorker } from './agent-worker.js';
import { PostgresExecutionLedger } from './execution-ledger.js';
import { TaskRecords } from '../ops/task-records.js';
import { TurnRunner, TurnUnavailable, type EventSink } from './turn-runner.js';
import { EventSigner, SignedEventSink } from './event-signer.js';
import { remoteBindingOf } from '../remote/remote-agent.js';
import { registerWithDirectory } from '../registration/directory-registration.js';
import { PostgresRemoteTaskLedger } from '../remote/remote-task-ledger.js';

/** What the runtime is built from: validated config, the agents to run, and what start-up opened. */
export interface AgentsRuntimeOptions {
  config: AgentsConfig;
  /** The agents AGENTS_RUN selected. */
  agents: AgentDefinition[];
  kafka: Kafka;
  /** The agents' schema, migrated; the runtime closes it at shutdown. */
  dataSource: DataSource;
  /** The broker readiness probe (HealthModule's); the runtime closes it at shutdown. */
  kafkaProbe: KafkaProbe;
  metrics: AgentsMetrics;
  /** The process's logger, naming this worker. */
  logger: Logger;
}

export const AGENTS_RUNTIME_OPTIONS = Symbol('AGENTS_RUNTIME_OPTIONS');

/** One agent served by this process: its command channel, consumer group, consumer and worker. */
export interface AgentChannel {
  agent: AgentDefinition;
  topic: string;
  groupId: string;
  /** What `/metrics` calls the agent, its group and its topic: the names when it is public, else its alias. */
  series: { agent: string; group: string; topic: string };
  /** The channel's consumer as a Nest server; `app.connectMicroservice({ strategy: transport })`. */
  transport: KafkaBusTransport;
  worker: AgentWorker;
  gateway: ToolGateway;
}

/** The agent's MCP servers with AGENTS_MCP_SERVERS overrides applied by server name. */
export function serversOf(agent: AgentDefinition, overrides: AgentsConfig['AGENTS_MCP_SERVERS']): Record<string, McpServerSpec> {
  const out: Record<string, McpServerSpec> = {};
  for (const [name, spec] of Object.entries(agent.mcpServers)) out[name] = { ...spec, ...(overrides[name] ?? {}) } as McpServerSpec;
  return out;
}

/**
 * Refuses to run agents whose tool servers take only audience-bound tokens (`tokenAudience`) without
 * a way to get them (AGENTS_TOKEN_URL, or the legacy AGENTS_TOOL_TOKEN_SECRET): every call such a
 * server gets would be refused, so every task would fail while the worker looked healthy. Checked
 * before the worker registers or consumes.
 */
export function assertToolTokenSecret(agents: readonly AgentDefinition[], config: AgentsConfig): void {
  if (config.AGENTS_TOOL_TOKEN_SECRET || config.AGENTS_TOKEN_URL) return;
  const needing = agents.flatMap((agent) =>
    Object.entries(serversOf(agent, config.AGENTS_MCP_SERVERS))
      .filter(([, spec]) => spec.tokenAudience)
      .map(([server, spec]) => `${agent.id} (server "${server}", audience ${spec.tokenAudience})`),
  );
  if (needing.length > 0)
    throw new MeshError(
      'CONFIG_INVALID',
      `AGENTS_TOKEN_URL is not set, but ${needing.join(', ')} call a tool server that accepts only tokens for its audience: ` +
        "set AGENTS_TOKEN_URL to the dispatcher's token endpoint (…/oauth/token; npm start writes it to .mesh/local.env), " +
        'or (a trusted platform worker) AGENTS_TOOL_TOKEN_SECRET to the server’s HS256 secret, or leave these agents out of AGENTS_RUN',
    );
}

/** The broker refused for want of an ACL (kafkajs names the error type). */
function isAuthorizationError(err: unknown): boolean {
  for (let e = err as { type?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.type === 'string' && e.type.endsWith('AUTHORIZATION_FAILED')) return true;
  }
  return false;
}

/**
 * How this worker gets tool tokens: the legacy shared secret when set (a trusted platform worker),
 * else the exchange of each run command's grant at AGENTS_TOKEN_URL; neither: none.
 */
export function toolTokenMinter(config: Pick<AgentsConfig, 'AGENTS_TOOL_TOKEN_SECRET' | 'AGENTS_TOKEN_URL'>): ToolTokenMinter | undefined {
  if (config.AGENTS_TOOL_TOKEN_SECRET) return new HmacToolTokenMinter(config.AGENTS_TOOL_TOKEN_SECRET);
  if (config.AGENTS_TOKEN_URL) return new GrantExchangeMinter({ tokenUrl: config.AGENTS_TOKEN_URL });
  return undefined;
}

/**
 * Refuses a ledger retention the command topic outlives: a command redelivered after its
 * execution row was deleted would run its turn (and its side effects) again.
 */
async function assertLedgerOutlivesCommands(admin: BusAdmin, topic: string, ledgerRetentionMs: number): Promise<void> {
  if (ledgerRetentionMs === 0) return;
  const topicMs = await admin.retentionMs(topic);
  if (topicMs < 0 || topicMs >= ledgerRetentionMs)
    throw new MeshError(
      'CONFIG_INVALID',
      `AGENTS_LEDGER_RETENTION_MS (${ledgerRetentionMs} ms) must be longer than the retention of ${topic} ` +
        `(${topicMs < 0 ? 'forever' : `${topicMs} ms`}): a command redelivered after its execution was deleted would run again. ` +
        'Lower the topic retention, raise AGENTS_LEDGER_RETENTION_MS, or set it to 0 to keep the ledgers.',
    );
}

/**
 * The worker process's lifetime, in one place because its steps are ordered. Bootstrap: the
 * producers, the command topics (the directory's, awaited; created when missing without one, never
 * grown: they are keyed, and growing one under running producers and consumers moves keys to other
 * partitions mid-task, see docs/operations.md), the ledger-retention check, the tool gateways' reconcile loops, ops sampler and retention sweeps.
 * The consumers are Nest servers (`channels[].transport`), started by the app after bootstrap;
 * then {@link startHeartbeats}. Drain (before HTTP closes, so readiness says "draining" while
 * liveness stays up): heartbeats, sampler and sweeps stop, every consumer drains its running
 * turns. Shutdown: tool gateways (their reconcile loops, then connections), producer, admin, probe, database.
 */
@Injectable()
export class AgentsRuntime implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  readonly channels: AgentChannel[];
  readonly effects: PostgresEffectLedger;
  readonly sampler: OpsSampler;
  /** Operators' read-only view of the ledgers (`/ops/tasks`). */
  readonly records: TaskRecords;
  /** The channels as the ops endpoints and sampler see them. */
  readonly workers: WorkerView[];
  private readonly workerByTopic: Map<string, AgentWorker>;
  private readonly producer: BusProducer;
  /** Where turns' events go: the events topic, or signed to the team events topic in team mode. */
  private readonly sink: EventSink;
  /**
   * Heartbeats go through a producer of their own: a batch fails whole when one of its topics is
   * missing, and the heartbeats topic is the directory's, so it must not hold the turns' events back.
   */
  private readonly heartbeats: BusProducer;
  private readonly admin: BusAdmin;
  private readonly retention: LedgerRetention;
  private readonly definitions: TopicDefinitions;
  private heartbeat?: NodeJS.Timeout;

  constructor(
    @Inject(AGENTS_RUNTIME_OPTIONS) private readonly opts: AgentsRuntimeOptions,
    @Inject(ServiceLifecycle) private readonly lifecycle: ServiceLifecycle,
  ) {
    const { config, kafka, dataSource, metrics, logger } = opts;
    this.definitions = topicDefinitions(config);
    this.producer = new BusProducer(kafka);
    this.heartbeats = new BusProducer(kafka);
    this.sink = config.AGENTS_EVENT_KEY
      ? new SignedEventSink(this.producer, new EventSigner(config.AGENTS_EVENT_KEY), this.definitions.names.teamEvents())
      : this.producer;
    this.admin = new BusAdmin(kafka);
    this.effects = new PostgresEffectLedger(dataSource);
    this.retention = new LedgerRetention(dataSource, {
      retentionMs: config.AGENTS_LEDGER_RETENTION_MS,
      sweepMs: config.AGENTS_LEDGER_SWEEP_MS,
      logger,
    });
    const executions = new PostgresExecutionLedger(dataSource);
    this.records = new TaskRecords(dataSource);
    const tokens = toolTokenMinter(config);
    // `/metrics` needs no token: an agent that is not public goes by its alias there.
    const publicIds = new Set(opts.agents.filter((a) => a.channel.visibility === 'public').map((a) => a.id));
    metrics.mesh.namePublicAgents((agentId) => publicIds.has(agentId));
    this.channels = opts.agents.map((agent) => this.channel(agent, executions, tokens));
    this.workerByTopic = new Map(this.channels.map((c) => [c.topic, c.worker]));
    this.workers = this.channels.map((c) => ({
      agentId: c.agent.id,
      groupId: c.groupId,
      seriesGroup: c.series.group,
      topic: c.topic,
      stats: () => c.transport.stats(),
      inFlight: () => c.worker.inFlight,
    }));
    this.sampler = new OpsSampler({
      admin: this.admin,
      workers: () => this.workers,
      ledger: this.effects,
      metrics: metrics.mesh,
      intervalMs: config.AGENTS_METRICS_INTERVAL_MS,
    });
  }

  /** The worker of the agent whose command topic this is (undefined: not a channel served here). */
  workerFor(topic: string): AgentWorker | undefined {
    return this.workerByTopic.get(topic);
  }

  async onApplicationBootstrap(): Promise<void> {
    const { config } = this.opts;
    await Promise.all([this.producer.connect(), this.heartbeats.connect()]);
    // The events topic is the dispatcher's and the heartbeats topic the directory's: written here,
    // created by their owners (events are only written in answer to the dispatcher's commands; a
    // heartbeat that finds no topic is a logged warning). An agent's command topic is the
    // directory's, created when the agent registered; a runtime without a directory is its own
    // registry and creates it (never grown: keyed, see docs/operations.md).
    // A team's worker (AGENTS_EVENT_KEY) creates nothing: its principal may not, and its agents'
    // topics are the directory's even when it runs without one.
    const { logger } = this.opts;
    const teamMode = config.AGENTS_EVENT_KEY !== undefined;
    for (const { agent, topic } of this.channels) {
      const definition = this.definitions.commands(agent.id, agent.channel.partitions);
      if (config.AGENTS_DIRECTORY_URL || teamMode)
        await this.admin.awaitTopic(topic, {
          owner: 'the directory',
          onWait: () => logger.warn({ src: 'agents-runtime', topic }, 'waiting for the directory to create the command topic'),
        });
      else await this.admin.ensureTopic(definition.name, definition);
      await assertLedgerOutlivesCommands(this.admin, topic, config.AGENTS_LEDGER_RETENTION_MS).catch((err: unknown) => {
        // A team's principal may not read topic configs; the platform sets the topics' retention.
        if (!(teamMode && isAuthorizationError(err))) throw err;
        logger.warn(
          { src: 'agents-runtime', topic },
          "not allowed to read the command topic's retention: the ledger retention check is skipped",
        );
      });
    }
    for (const { gateway } of this.channels) gateway.start();
    this.sampler.start();
    this.retention.start();
  }

  /** Announces every agent's worker on the heartbeats topic now and every interval; call once the consumers run. */
  startHeartbeats(): void {
    const { config, metrics, logger } = this.opts;
    const topic = this.definitions.names.heartbeats();
    const workerId = config.AGENTS_WORKER_ID;
    // With the id, where the process runs: operators find a worker by host (`mesh workers`).
    const host = hostname();
    // And as whom it reads the agent's commands: the Kafka user name, never the password. The
    // config's credentials, else the environment's, as createKafka takes them.
    const principal = config.KAFKA_USERNAME ?? saslFromEnv()?.username;
    const beat = () => {
      const now = Date.now();
      for (const { worker, series, agent } of this.channels) {
        metrics.inFlight.set({ agent: series.agent }, worker.inFlight);
        // A remote agent whose breaker is open is not announced: the directory shows it unhealthy
        // and the dispatcher's admission refuses new tasks for it.
        if (remoteBindingOf(agent)?.available() === false) continue;
        const hb: AgentHeartbeat = {
          agentId: worker.agentId,
          workerId,
          host,
          ...(principal ? { principal } : {}),
          atUnixMs: now,
          ttlMs: config.AGENTS_HEARTBEAT_INTERVAL_MS * 3,
        };
        this.heartbeats
          .sendRecord(topic, worker.agentId, JSON.stringify(hb))
          .catch((err: unknown) => logger.warn({ src: 'heartbeat', agent: worker.agentId, error: String(err) }, 'heartbeat failed'));
      }
    };
    beat();
    this.heartbeat = setInterval(beat, config.AGENTS_HEARTBEAT_INTERVAL_MS);
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Not ready from the first moment of the drain (the pod leaves its Service), still alive.
    this.lifecycle.markDraining();
    clearInterval(this.heartbeat);
    await this.sampler.stop();
    await this.retention.stop();
    // Drained here, while HTTP still answers; Nest closes the transports again after HTTP, a no-op then.
    await Promise.allSettled(this.channels.map((c) => c.transport.close()));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled(this.channels.map((c) => c.gateway.close()));
    for (const c of this.channels) remoteBindingOf(c.agent)?.close();
    await Promise.all([this.producer.disconnect(), this.heartbeats.disconnect()]).catch(() => undefined);
    await this.admin.close().catch(() => undefined);
    await this.opts.kafkaProbe.close();
    if (this.opts.dataSource.isInitialized) await this.opts.dataSource.destroy();
  }

  private channel(agent: AgentDefinition, executions: PostgresExecutionLedger, tokens: ToolTokenMinter | undefined): AgentChannel {
    const { config, kafka, metrics, logger } = this.opts;
    const topics = this.definitions.names;
    const topic = topics.commands(agent.id);
    const groupId = new ConsumerGroups(config.TOPIC_PREFIX).agentWorkers(agent.id);
    const label = metrics.mesh.agentLabel(agent.id);
    const series = label === agent.id ? { agent: label, group: groupId, topic } : { agent: label, group: label, topic: label };
    const gateway = new ToolGateway({
      servers: serversOf(agent, config.AGENTS_MCP_SERVERS),
      ledger: this.effects,
      clientName: `agent-mesh/${agent.id}`,
      tokens,
      defaultRequestTimeoutMs: config.AGENTS_TOOL_TIMEOUT_MS,
      tracePayloads: config.AGENTS_TRACE_TOOL_PAYLOADS,
      reconcile: {
        intervalMs: config.AGENTS_RECONCILE_INTERVAL_MS,
        // Refreshes mesh_unknown_outcomes_open (by tool) after each pass of the loop.
        onUnknownCount: () => void this.sampler.unknowns().catch(() => undefined),
        onResolved: (tool, obs) => metrics.mesh.unknownOutcomesResolved.inc({ ...splitToolName(tool), resolution: obs.status }),
      },
      onCall: ({ tool, outcome, ms }) => {
        metrics.toolCalls.inc({ agent: series.agent, tool, outcome });
        metrics.mesh.toolLatency.observe({ ...splitToolName(tool), result: outcome }, ms / 1000);
        // A side effect answered from the effect ledger instead of being done again.
        if (outcome === 'replayed') metrics.mesh.dedupHits.inc({ kind: 'effect_key', agent: agent.id });
      },
    });
    const maxInFlight = config.AGENTS_MAX_IN_FLIGHT ?? agent.channel.maxInFlight;
    const runner = new TurnRunner({
      agent,
      ledger: executions,
      tools: gateway,
      effects: this.effects,
      sink: this.sink,
      topics,
      workerId: config.AGENTS_WORKER_ID,
      leaseMs: config.AGENTS_EXECUTION_LEASE_MS,
      unknownWaitMs: config.AGENTS_UNKNOWN_WAIT_MS,
      retryBudget: config.AGENTS_RETRY_BUDGET,
      logger,
      observe: {
        turnFinished: (state) => metrics.turns.inc({ agent: series.agent, state }),
        dedupHit: () => metrics.mesh.dedupHits.inc({ kind: 'execution_id', agent: agent.id }),
      },
    });
    const countDead = countDeadLetters(metrics.mesh.deadLetters, [series.topic]);
    const transport = new KafkaBusTransport(kafka, {
      groupId,
      topics: [topic],
      topicDefinitions: this.definitions,
      // Turns write the execution ledger: a Postgres restart is an outage, not a bad command; nor is
      // a turn given up because its remote agent asked for a pause.
      isTransient: anyTransient(isTransientKafkaError, isTransientPostgresError, (err) => err instanceof TurnUnavailable),
      // Cancels must get past runs waiting for a slot, so the consumer admits more than the worker runs.
      maxInFlight: maxInFlight * 2,
      // A tenant's runs beyond its limit wait in the bus while other tenants' go first; a cancel
      // never waits behind them (it must reach the run it cancels).
      ...(config.AGENTS_TENANT_MAX_IN_FLIGHT ? { perTenantInFlight: config.AGENTS_TENANT_MAX_IN_FLIGHT } : {}),
      outsideTenantLimit: (e) => e.kind === 'task.cancel',
      // One task's messages run in order, except a cancel: it must reach the run it cancels while that runs.
      orderingKey: (e) => (e.kind === 'task.cancel' ? `${e.identity.taskId}:cancel` : e.identity.taskId),
      fromBeginning: true,
      drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
      consumerConfig: {
        sessionTimeout: config.AGENTS_CONSUMER_SESSION_TIMEOUT_MS,
        heartbeatInterval: Math.min(3000, Math.floor(config.AGENTS_CONSUMER_SESSION_TIMEOUT_MS / 3)),
        maxWaitTimeInMs: 100,
      },
      onError: (err, what) => logger.warn({ src: 'command-consumer', agent: agent.id, error: String(err) }, what),
      onDeadLetter: (dead) => countDead({ ...dead, topic: series.topic }),
    });
    const worker = new AgentWorker(agent.id, runner, maxInFlight);
    remoteBindingOf(agent)?.attach({
      effects: this.effects,
      remoteTasks: new PostgresRemoteTaskLedger(this.opts.dataSource),
      pause: (ms) => worker.pauseFor(ms),
      ...(config.AGENTS_DIRECTORY_URL && config.AGENTS_DIRECTORY_TOKEN
        ? {
            republish: (card: AgentDefinition['card']) =>
              registerWithDirectory([{ ...agent, card }], {
                url: config.AGENTS_DIRECTORY_URL!,
                token: config.AGENTS_DIRECTORY_TOKEN!,
                byContent: true,
                logger,
              }),
          }
        : {}),
      workerId: config.AGENTS_WORKER_ID,
      logger,
    });
    return { agent, topic, groupId, series, transport, worker, gateway };
  }
}
