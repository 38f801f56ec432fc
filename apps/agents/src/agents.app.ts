import 'reflect-metadata';
import type { AgentDefinition, McpServerSpec } from '@mesh/agent-sdk';
import { assertKafkaReachable, BusAdmin, BusConsumer, BusProducer, createKafka, isTransientKafkaError, KafkaProbe } from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { anyTransient, ConsumerGroups, MeshError, type AgentHeartbeat, type TopicDefinition } from '@mesh/contract';
import { isTransientPostgresError, openServiceDatabase, PostgresProbe } from '@mesh/database';
import { ServiceLifecycle, startHttpService } from '@mesh/service';
import { createLogger, type Logger } from '@mesh/telemetry';
import { OpsSampler, splitToolName, type WorkerView } from './ops/ops-sampler.js';
import { HmacToolTokenMinter, PostgresEffectLedger, Reconciler, ToolGateway } from '@mesh/tool-gateway';
import { AppModule } from './app.module.js';
import type { AgentsConfig } from './config/agents.config.js';
import { agentsMigrations, AGENTS_SCHEMA } from './database/migrations/index.js';
import { AgentWorker } from './runtime/agent-worker.js';
import { PostgresExecutionLedger } from './runtime/execution-ledger.js';
import { TurnRunner } from './runtime/turn-runner.js';
import { LedgerRetention } from './retention/ledger-retention.js';
import { sampleAgents } from './sample-agents/index.js';
import { AgentsMetrics } from './metrics/agents.metrics.js';
import { registerWithDirectory } from './registration/directory-registration.js';

/** A running agents: `stop` drains and closes every connection. */
export interface RunningAgents {
  url: string;
  workerId: string;
  stop(): Promise<void>;
}

/** What embedders may set; production uses the defaults. */
export interface AgentsOverrides {
  /** The process's logger (runMain's); defaults to one named `agents` at LOG_LEVEL. */
  logger?: Logger;
}

/** The agent's MCP servers with AGENTS_MCP_SERVERS overrides applied by server name. */
function serversOf(agent: AgentDefinition, overrides: AgentsConfig['AGENTS_MCP_SERVERS']): Record<string, McpServerSpec> {
  const out: Record<string, McpServerSpec> = {};
  for (const [name, spec] of Object.entries(agent.mcpServers)) out[name] = { ...spec, ...(overrides[name] ?? {}) } as McpServerSpec;
  return out;
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

/** Starts the agents: database (created and migrated), topics, one worker per agent in AGENTS_RUN, the reconciler, heartbeats, HTTP health. */
export async function startAgents(
  config: AgentsConfig,
  agents: Record<string, AgentDefinition> = sampleAgents,
  overrides: AgentsOverrides = {},
): Promise<RunningAgents> {
  const selected = config.AGENTS_RUN.map((id) => {
    const def = agents[id];
    if (!def) throw new MeshError('CONFIG_INVALID', `AGENTS_RUN names unknown agent "${id}" (known: ${Object.keys(agents).join(', ')})`);
    return def;
  });
  const workerId = config.AGENTS_WORKER_ID;
  // Every line names this worker process (and its agent group when the chart sets one).
  const logger = (overrides.logger ?? createLogger('agents')).child({
    worker: workerId,
    ...(config.AGENTS_GROUP ? { agentGroup: config.AGENTS_GROUP } : {}),
  });
  if (config.AGENTS_DIRECTORY_URL) {
    if (!config.AGENTS_DIRECTORY_TOKEN)
      throw new MeshError('CONFIG_INVALID', 'AGENTS_DIRECTORY_URL is set but AGENTS_DIRECTORY_TOKEN is not');
    await registerWithDirectory(selected, { url: config.AGENTS_DIRECTORY_URL, token: config.AGENTS_DIRECTORY_TOKEN, logger });
  }
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-agents`, logger };
  await assertKafkaReachable(kafkaOpts);
  const ds = await openServiceDatabase({ url: config.DATABASE_URL, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations });
  const kafka = createKafka(kafkaOpts);
  const definitions = topicDefinitions(config);
  const topics = definitions.names;
  const groups = new ConsumerGroups(config.TOPIC_PREFIX);
  const admin = new BusAdmin(kafka);
  const producer = new BusProducer(kafka);
  const effects = new PostgresEffectLedger(ds);
  const executions = new PostgresExecutionLedger(ds);
  const tokens = config.AGENTS_TOOL_TOKEN_SECRET ? new HmacToolTokenMinter(config.AGENTS_TOOL_TOKEN_SECRET) : undefined;
  const gateways: ToolGateway[] = [];
  const workers: AgentWorker[] = [];
  const metrics = new AgentsMetrics(config.AGENTS_GROUP);
  const reconciler = new Reconciler(effects, () => gateways, {
    intervalMs: config.AGENTS_RECONCILE_INTERVAL_MS,
    // Refreshes mesh_unknown_outcomes_open (by tool) whenever the reconciler's count changes.
    onUnknownCount: () => void sampler.unknowns().catch(() => undefined),
    onResolved: (tool, obs) => metrics.mesh.unknownOutcomesResolved.inc({ agent: '*', ...splitToolName(tool), resolution: obs.status }),
  });
  const retention = new LedgerRetention(ds, {
    retentionMs: config.AGENTS_LEDGER_RETENTION_MS,
    sweepMs: config.AGENTS_LEDGER_SWEEP_MS,
    logger,
  });
  const views: WorkerView[] = [];
  const sampler = new OpsSampler(admin, () => views, effects, metrics.mesh, config.AGENTS_METRICS_INTERVAL_MS);
  let heartbeat: NodeJS.Timeout | undefined;
  const closeAll = async () => {
    clearInterval(heartbeat);
    await sampler.stop();
    await retention.stop();
    await Promise.allSettled(workers.map((w) => w.stop()));
    await reconciler.stop();
    await Promise.allSettled(gateways.map((g) => g.close()));
    await producer.disconnect().catch(() => undefined);
    await admin.close().catch(() => undefined);
  };

  try {
    await producer.connect();
    // Topics are created when missing, never grown: they are keyed, and growing one under running
    // producers and consumers moves keys to other partitions mid-task (see docs/operations.md).
    const ensureMissing = (topic: TopicDefinition) => admin.ensureTopic(topic.name, topic);
    await ensureMissing(definitions.events());
    await ensureMissing(definitions.heartbeats());
    for (const agent of selected) {
      await ensureMissing(definitions.commands(agent.id, agent.channel.partitions));
      await assertLedgerOutlivesCommands(admin, topics.commands(agent.id), config.AGENTS_LEDGER_RETENTION_MS);
      const gateway = new ToolGateway({
        servers: serversOf(agent, config.AGENTS_MCP_SERVERS),
        ledger: effects,
        clientName: `agent-mesh/${agent.id}`,
        tokens,
        defaultRequestTimeoutMs: config.AGENTS_TOOL_TIMEOUT_MS,
        tracePayloads: config.AGENTS_TRACE_TOOL_PAYLOADS,
        onCall: ({ tool, outcome, ms }) => {
          metrics.toolCalls.inc({ agent: agent.id, tool, outcome });
          metrics.mesh.toolLatency.observe({ ...splitToolName(tool), result: outcome }, ms / 1000);
          // A side effect answered from the effect ledger instead of being done again.
          if (outcome === 'replayed') metrics.mesh.dedupHits.inc({ kind: 'effect_key', agent: agent.id });
        },
      });
      gateways.push(gateway);
      const maxInFlight = config.AGENTS_MAX_IN_FLIGHT ?? agent.channel.maxInFlight;
      const runner = new TurnRunner({
        agent,
        ledger: executions,
        tools: gateway,
        effects,
        reconciler,
        sink: producer,
        topics,
        workerId,
        leaseMs: config.AGENTS_EXECUTION_LEASE_MS,
        unknownWaitMs: config.AGENTS_UNKNOWN_WAIT_MS,
        retryBudget: config.AGENTS_RETRY_BUDGET,
        logger,
        observe: {
          turnFinished: (state) => metrics.turns.inc({ agent: agent.id, state }),
          dedupHit: () => metrics.mesh.dedupHits.inc({ kind: 'execution_id', agent: agent.id }),
        },
      });
      const groupId = groups.agentWorkers(agent.id);
      const source = new BusConsumer(kafka, {
        groupId,
        topics: [topics.commands(agent.id)],
        topicDefinitions: definitions,
        // Turns write the execution ledger: a Postgres restart is an outage, not a bad command.
        isTransient: anyTransient(isTransientKafkaError, isTransientPostgresError),
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
      });
      const worker = new AgentWorker(agent.id, source, runner, maxInFlight);
      workers.push(worker);
      views.push({ agentId: agent.id, groupId, topic: topics.commands(agent.id), consumer: source, inFlight: () => worker.inFlight });
    }
    reconciler.start();
    sampler.start();
    retention.start();
    for (const w of workers) await w.start();
    const beat = () => {
      const now = Date.now();
      for (const w of workers) {
        metrics.inFlight.set({ agent: w.agentId }, w.inFlight);
        const hb: AgentHeartbeat = { agentId: w.agentId, workerId, atUnixMs: now, ttlMs: config.AGENTS_HEARTBEAT_INTERVAL_MS * 3 };
        producer
          .sendRecord(topics.heartbeats(), w.agentId, JSON.stringify(hb))
          .catch((err: unknown) => logger.warn({ src: 'heartbeat', agent: w.agentId, error: String(err) }, 'heartbeat failed'));
      }
    };
    beat();
    heartbeat = setInterval(beat, config.AGENTS_HEARTBEAT_INTERVAL_MS);
  } catch (err) {
    await closeAll();
    await ds.destroy().catch(() => undefined);
    throw err;
  }

  const kafkaProbe = new KafkaProbe(kafka);
  const app = await startHttpService({
    logger,
    module: AppModule.forRoot([new PostgresProbe(ds), kafkaProbe], metrics, {
      sampler,
      ledger: effects,
      workers: () => views,
      workerId,
      ...(config.AGENTS_OPS_TOKEN ? { token: config.AGENTS_OPS_TOKEN } : {}),
    }),
    port: config.AGENTS_PORT,
    host: config.HTTP_HOST,
  });
  return {
    url: await app.getUrl(),
    workerId,
    async stop() {
      // Not ready from the first moment of the drain (the pod leaves its Service), still alive.
      app.get(ServiceLifecycle).markDraining();
      await closeAll();
      await app.close();
      await kafkaProbe.close();
      await ds.destroy();
    },
  };
}
