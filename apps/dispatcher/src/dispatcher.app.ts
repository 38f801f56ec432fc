import 'reflect-metadata';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { RequestHandler } from 'express';
import { createKafka, KafkaProbe, type KafkaBusTransport } from '@mesh/bus';
import { PostgresProbe, serviceDataSource } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { kafkaCredentials } from '@mesh/config';
import { Authenticator, loadAuthOptions, type AuthenticatorOptions } from '@mesh/auth';
import { createLogger, MeshMetrics, type Logger } from '@mesh/telemetry';
import { AppModule } from './app.module.js';
import type { DispatcherConfig } from './config/dispatcher.config.js';
import { dispatcherMigrations, DISPATCHER_SCHEMA } from './database/migrations/index.js';
import type { CommandProducer } from './outbox/command-producer.js';
import type { ToolAudiencePolicy } from './grants/tool-audience.policy.js';
import { PROJECTOR_TRANSPORT } from './events/events.module.js';
import { A2A_ROUTER } from './a2a/a2a.module.js';
import { a2aBodyErrorHandler } from './a2a/a2a-body.reader.js';
import { rootAgentRoutes } from './a2a/root-agent.js';
import { A2A_MOUNT } from './a2a/a2a.routes.js';

/** A running dispatcher: `stop` drains and closes every connection. */
export interface RunningDispatcher {
  url: string;
  stop(): Promise<void>;
}

/** What tests and embedders may replace; production uses the defaults. */
export interface DispatcherOverrides {
  /** Authentication; defaults to the AUTH_* environment. */
  auth?: AuthenticatorOptions;
  /** Wraps the command producer (tests use it to make Kafka unavailable for the relay). */
  wrapProducer?: (producer: CommandProducer) => CommandProducer;
  /** Metrics catalog served on /metrics (tasks by outcome, dedup hits, push deliveries). */
  metrics?: MeshMetrics;
  /** The process's logger (runMain's); defaults to one named `dispatcher` at LOG_LEVEL. */
  logger?: Logger;
  /** Which tool servers each agent may get tokens for at POST /oauth/token (default: any). */
  toolAudiencePolicy?: ToolAudiencePolicy;
}

/**
 * Starts the dispatcher as a Nest application of feature modules (see AppModule for the order of
 * start and drain): Kafka check and database (created and migrated), agent catalog, outbox relay,
 * push, task commit feed, task lifecycle, then the projector's transport, then the HTTP server with
 * `/a2a/:agentId` mounted. `stop` is `app.close()`; a failed start closes what it started.
 */
export async function startDispatcher(config: DispatcherConfig, overrides: DispatcherOverrides = {}): Promise<RunningDispatcher> {
  const logger = overrides.logger ?? createLogger('dispatcher');
  const kafkaConnection = {
    brokers: config.KAFKA_BROKERS,
    clientId: `${config.KAFKA_CLIENT_ID}-dispatcher`,
    logger,
    ...kafkaCredentials(config),
  };
  const kafka = createKafka(kafkaConnection);
  const dataSource = serviceDataSource({
    url: config.DATABASE_URL,
    schema: DISPATCHER_SCHEMA,
    entities: [],
    migrations: dispatcherMigrations,
    poolSize: 20,
  });
  const kafkaProbe = new KafkaProbe(kafka);
  // Settings are checked before anything connects.
  const authenticator = new Authenticator(overrides.auth ?? loadAuthOptions());
  const deps = {
    config,
    logger,
    kafka,
    kafkaConnection,
    kafkaProbe,
    dataSource,
    authenticator,
    wrapProducer: overrides.wrapProducer,
    toolAudiencePolicy: overrides.toolAudiencePolicy,
  };

  let created: NestExpressApplication | undefined;
  try {
    const app = await startHttpService({
      logger,
      metrics:
        overrides.metrics ??
        new MeshMetrics({
          labels: { tenantLabels: config.METRICS_TENANT_LABELS, maxTenantAgentPairs: config.METRICS_MAX_TENANT_AGENT_PAIRS },
        }),
      module: AppModule.forRoot(deps, [new PostgresProbe(dataSource), kafkaProbe]),
      port: config.DISPATCHER_PORT,
      host: config.HTTP_HOST,
      bodyLimit: config.DISPATCHER_BODY_LIMIT,
      // The A2A router reads bodies once the caller is authenticated (a2a.router.ts).
      parseJsonBodies: false,
      configure: (nest) => {
        created = nest;
        // Every A2A answer is fresh JSON; an ETag per response is hashing for nothing (the card
        // handler sets its own).
        nest.set('etag', false);
        const bodyErrors = a2aBodyErrorHandler(config.DISPATCHER_BODY_LIMIT, logger);
        const root = config.DISPATCHER_ROOT_AGENT ? rootAgentRoutes(config.DISPATCHER_ROOT_AGENT, bodyErrors) : undefined;
        if (root) nest.use(root.rewrite);
        nest.use(A2A_MOUNT, nest.get<RequestHandler>(A2A_ROUTER));
        nest.use(A2A_MOUNT, bodyErrors);
        if (root) nest.use(root.bodyErrors);
        // The projector consumes the events topic as a Nest microservice (TaskEventsController).
        nest.connectMicroservice({ strategy: nest.get<KafkaBusTransport>(PROJECTOR_TRANSPORT) });
      },
    });
    const url = `http://localhost:${(app.getHttpServer().address() as { port: number }).port}`;
    let stopping: Promise<void> | undefined;
    return { url, stop: () => (stopping ??= app.close()) };
  } catch (err) {
    // Runs every shutdown hook: what started drains, the connections close.
    await created?.close().catch(() => undefined);
    throw err;
  }
}
