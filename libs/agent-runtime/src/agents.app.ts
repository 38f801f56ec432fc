import 'reflect-metadata';
import type { HttpException, INestApplication } from '@nestjs/common';
import type { AgentDefinition } from '@mesh/agent-sdk';
import { assertKafkaReachable, createKafka, KafkaProbe } from '@mesh/bus';
import { MeshError } from '@mesh/contract';
import { openServiceDatabase, PostgresProbe } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { kafkaCredentials } from '@mesh/config';
import { createLogger, type Logger } from '@mesh/telemetry';
import { AppModule } from './app.module.js';
import type { AgentsConfig } from './config/agents.config.js';
import { agentsMigrations, AGENTS_SCHEMA } from './database/migrations/index.js';
import { AgentsMetrics } from './metrics/agents.metrics.js';
import { checkOpsCredential } from './ops/ops.controller.js';
import { registerWithDirectory } from './registration/directory-registration.js';
import { AgentsRuntime, assertToolTokenSecret } from './runtime/agents-runtime.js';

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

/**
 * Starts the agents: directory registration, a reachable broker, the database (created and
 * migrated), then the Nest app (AppModule): its bootstrap ensures the topics, one consumer per
 * agent in AGENTS_RUN runs as a Nest microservice, heartbeats follow, and HTTP (health, metrics,
 * ops) listens last. `stop` is `app.close()`: the runtime's shutdown hooks drain and close.
 */
export async function startAgents(
  config: AgentsConfig,
  agents: Record<string, AgentDefinition> | readonly AgentDefinition[],
  overrides: AgentsOverrides = {},
): Promise<RunningAgents> {
  const byId = agentsById(agents);
  const selected = (config.AGENTS_RUN ?? Object.keys(byId)).map((id) => {
    const def = byId[id];
    if (!def) throw new MeshError('CONFIG_INVALID', `AGENTS_RUN names unknown agent "${id}" (known: ${Object.keys(byId).join(', ')})`);
    return def;
  });
  if (selected.length === 0) throw new MeshError('CONFIG_INVALID', 'no agent to run: pass at least one agent definition');
  // Refused before anything is registered or consumed: such a worker could only fail its tasks.
  assertToolTokenSecret(selected, config);
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
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-agents`, logger, ...kafkaCredentials(config) };
  await assertKafkaReachable(kafkaOpts);
  const dataSource = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: AGENTS_SCHEMA,
    entities: [],
    migrations: agentsMigrations,
  });
  const kafka = createKafka(kafkaOpts);
  const kafkaProbe = new KafkaProbe(kafka);
  let nest: INestApplication | undefined;
  try {
    const app = await startHttpService({
      logger,
      module: AppModule.forRoot({
        runtime: { config, agents: selected, kafka, dataSource, kafkaProbe, metrics: new AgentsMetrics(config.AGENTS_GROUP), logger },
        probes: [new PostgresProbe(dataSource), kafkaProbe],
        ops: { workerId, ...(config.AGENTS_OPS_TOKEN ? { token: config.AGENTS_OPS_TOKEN } : {}) },
      }),
      port: config.AGENTS_PORT,
      host: config.HTTP_HOST,
      // Only /ops takes a body (resolving an unknown outcome), and only from the operator: a caller
      // without the ops token is answered 401 before its body is read.
      authenticateBodies: () => ({
        authenticate: (req) => checkOpsCredential(req, config.AGENTS_OPS_TOKEN),
        // checkOpsCredential refuses with nothing but its 401 HttpException.
        refuse: (_req, res, reason) => res.status(401).json((reason as HttpException).getResponse()),
      }),
      configure: async (created) => {
        nest = created;
        const runtime = created.get(AgentsRuntime);
        for (const { transport } of runtime.channels) created.connectMicroservice({ strategy: transport });
      },
      // Bootstrap hooks first (topics exist, ledgers checked), then the consumers, then the
      // heartbeats that tell dispatchers a worker consumes; HTTP listens after this.
      started: (created) => created.get(AgentsRuntime).startHeartbeats(),
    });
    let stopped: Promise<void> | undefined;
    // Once: SIGTERM and an embedder's own stop may both ask.
    return { url: await app.getUrl(), workerId, stop: () => (stopped ??= app.close()) };
  } catch (err) {
    // The app's shutdown hooks close what its start opened; without an app, only these are open.
    if (nest) await nest.close().catch(() => undefined);
    await kafkaProbe.close();
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw err;
  }
}

/** The agents by id; two definitions with one id are a mistake, not an override. */
function agentsById(agents: Record<string, AgentDefinition> | readonly AgentDefinition[]): Record<string, AgentDefinition> {
  if (!Array.isArray(agents)) return agents as Record<string, AgentDefinition>;
  const out: Record<string, AgentDefinition> = {};
  for (const a of agents as readonly AgentDefinition[]) {
    if (out[a.id]) throw new MeshError('CONFIG_INVALID', `two agent definitions have the id "${a.id}"`);
    out[a.id] = a;
  }
  return out;
}
