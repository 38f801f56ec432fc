import 'reflect-metadata';
import { assertKafkaReachable, createKafka, KafkaProbe } from '@mesh/bus';
import { openServiceDatabase, PostgresProbe } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { Authenticator, loadAuthOptions, type AuthenticatorOptions } from '@mesh/auth';
import { topicDefinitions } from '@mesh/config';
import { ConsumerGroups, DEFAULT_COMMAND_PARTITIONS } from '@mesh/contract';
import { AppModule } from './app.module.js';
import type { DispatcherConfig } from './config/dispatcher.config.js';
import { dispatcherMigrations, DISPATCHER_SCHEMA } from './database/migrations/index.js';
import { TaskService } from './tasks/task.service.js';
import { TaskProjection } from './tasks/task-projection.js';
import { TaskLifecycle } from './tasks/task-lifecycle.js';
import { createLogger, MeshMetrics, type Logger } from '@mesh/telemetry';
import { PushService, pushNotificationOf } from './push/push.service.js';
import { DirectoryAgentLookup } from './catalog/agent-catalog.js';
import { EventFanout } from './events/event-fanout.js';
import { Admission } from './admission/admission.js';
import { KafkaWorkerSignals } from './admission/worker-signals.js';
import { BusCommandProducer, type CommandProducer } from './outbox/command-producer.js';
import { OutboxRelay } from './outbox/outbox.relay.js';
import { TaskEventBusManager } from './events/task-event-bus.manager.js';
import { StoredTaskWatch } from './events/stored-task-watch.js';
import { TenantStreamSlots } from './events/stream-slots.js';
import { EventProjector } from './events/event-projector.js';
import { DispatcherRequestHandler } from './a2a/dispatcher-request-handler.js';
import { a2aBodyErrorHandler, a2aRouter } from './a2a/a2a.router.js';

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
}

/**
 * Starts the dispatcher: database (created and migrated), Kafka check, agent catalog, event
 * projector, outbox relay, then the HTTP server with `/a2a/:agentId` mounted.
 */
export async function startDispatcher(config: DispatcherConfig, overrides: DispatcherOverrides = {}): Promise<RunningDispatcher> {
  const logger = overrides.logger ?? createLogger('dispatcher');
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-dispatcher`, logger };
  await assertKafkaReachable(kafkaOpts);
  const kafka = createKafka(kafkaOpts);
  const metrics = overrides.metrics ?? new MeshMetrics();
  const definitions = topicDefinitions(config);
  const topics = definitions.names;
  const groups = new ConsumerGroups(config.TOPIC_PREFIX);
  const ds = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: DISPATCHER_SCHEMA,
    entities: [],
    migrations: dispatcherMigrations,
    poolSize: 20,
  });
  const stops: Array<() => Promise<void>> = [async () => void (await ds.destroy())];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    const catalog = new DirectoryAgentLookup(kafka, definitions, groups);
    stops.push(() => catalog.stop());
    await catalog.start();

    const projection = new TaskProjection(ds, pushNotificationOf);
    const tasks = new TaskService(ds, topics, {
      created: (row, executionId) => projection.primeNew(row, executionId),
      startTimeoutMs: config.DISPATCHER_START_TIMEOUT_MS,
    });
    const buses = new TaskEventBusManager();
    const realProducer = new BusCommandProducer(kafka, (agentId) =>
      definitions.commands(agentId, catalog.get(agentId)?.channel?.partitions || DEFAULT_COMMAND_PARTITIONS),
    );
    const producer = overrides.wrapProducer ? overrides.wrapProducer(realProducer) : realProducer;
    stops.push(() => producer.close());
    const relay = new OutboxRelay(ds, producer, {
      batchSize: config.OUTBOX_BATCH_SIZE,
      idleMs: config.OUTBOX_IDLE_MS,
      lingerMs: config.OUTBOX_LINGER_MS,
      maxBackoffMs: 5000,
      logger,
    });
    relay.start();
    stops.push(() => relay.stop());

    const push = new PushService(
      ds,
      {
        allowCidrs: config.PUSH_EGRESS_ALLOW_CIDRS,
        maxAttempts: config.PUSH_MAX_ATTEMPTS,
        backoffBaseMs: config.PUSH_BACKOFF_BASE_MS,
        backoffMaxMs: config.PUSH_BACKOFF_MAX_MS,
        timeoutMs: config.PUSH_TIMEOUT_MS,
        pollMs: config.PUSH_POLL_MS,
        logger,
      },
      metrics,
    );
    push.start();
    stops.push(() => push.stop());
    const projectorGroup = groups.dispatcherProjector();
    const projector = new EventProjector(kafka, definitions, projectorGroup, projection, buses, { push, metrics, logger });
    await projector.start();
    stops.push(() => projector.stop());
    const lifecycle = new TaskLifecycle(
      tasks,
      (agentId, tenant) => catalog.recordFor(agentId, tenant),
      {
        deadlineGraceMs: config.DISPATCHER_DEADLINE_GRACE_MS,
        retentionMs: config.DISPATCHER_TASK_RETENTION_MS,
        sweepMs: config.DISPATCHER_LIFECYCLE_SWEEP_MS,
        logger,
      },
      ({ tenant, agentId, task, reason }) => {
        // Stored with its cancel command and push deliveries already: wake their senders.
        relay.kick();
        push.kick();
        metrics.tasks.inc({ tenant, agent: agentId, outcome: reason === 'NOT_STARTED' ? 'not_started' : 'expired' });
        buses.committedHere(task);
      },
    );
    lifecycle.start();
    stops.push(() => lifecycle.stop());
    const fanout = new EventFanout(kafka, topics.events(), (replicaId) => groups.dispatcherFanout(replicaId), buses, {
      projectorGroup,
      idleMs: config.DISPATCHER_FANOUT_IDLE_MS,
      logger,
    });
    buses.feedFrom(fanout);
    await fanout.start();
    stops.push(() => fanout.stop());
    const signals = new KafkaWorkerSignals(
      kafka,
      (agentId) => groups.agentWorkers(agentId),
      (agentId) => topics.commands(agentId),
      (agentId) => catalog.healthy(agentId),
      config.DISPATCHER_BACKLOG_CHECK_MS,
      config.DISPATCHER_BACKLOG_WAIT_MS,
    );
    stops.push(() => signals.close());
    const admission = new Admission(signals, {
      ratePerSecond: config.DISPATCHER_TENANT_RATE_PER_S,
      burst: config.DISPATCHER_TENANT_BURST,
      requireHealthyWorker: config.DISPATCHER_REQUIRE_HEALTHY_WORKER,
      maxBacklog: config.DISPATCHER_MAX_AGENT_BACKLOG,
      retryAfterSeconds: config.DISPATCHER_RETRY_AFTER_S,
    });

    const storedTasks = new StoredTaskWatch((taskId, tenant, agentId) => tasks.load(taskId, tenant, agentId), buses, {
      pollMs: config.DISPATCHER_STREAM_POLL_MS,
      hurriedPollMs: config.DISPATCHER_WAIT_POLL_MS,
      logger,
    });
    const streamSlots = new TenantStreamSlots(config.DISPATCHER_MAX_STREAMS_PER_TENANT);

    const kafkaProbe = new KafkaProbe(kafka);
    stops.push(() => kafkaProbe.close());
    // Known only after listen when the port is 0 (tests); cards are built on first use.
    let publicUrl = config.DISPATCHER_PUBLIC_URL ?? `http://localhost:${config.DISPATCHER_PORT}`;
    const authenticator = new Authenticator(overrides.auth ?? loadAuthOptions());
    const app = await startHttpService({
      logger,
      metrics,
      module: AppModule.forRoot([new PostgresProbe(ds), kafkaProbe]),
      port: config.DISPATCHER_PORT,
      host: config.HTTP_HOST,
      bodyLimit: config.DISPATCHER_BODY_LIMIT,
      configure: (nest) => {
        // Every A2A answer is fresh JSON; an ETag per response is hashing for nothing (the card
        // handler sets its own).
        nest.set('etag', false);
        nest.use(
          '/a2a',
          a2aRouter({
            authenticator,
            catalog,
            publicUrl: () => publicUrl,
            bodyLimit: config.DISPATCHER_BODY_LIMIT,
            cardMaxAgeSeconds: config.DISPATCHER_CARD_MAX_AGE_S,
            logger,
            handlerFor: (record, card) =>
              new DispatcherRequestHandler(card, record, tasks, buses, relay, push, {
                maxBlockingMs: config.DISPATCHER_BLOCKING_TIMEOUT_MS,
                storedTasks,
                settleGraceMs: config.DISPATCHER_STREAM_POLL_MS,
                streamMaxMs: config.DISPATCHER_STREAM_MAX_MS,
                defaultDeadlineMs: config.DISPATCHER_DEFAULT_DEADLINE_MS,
                maxDeadlineMs: config.DISPATCHER_MAX_DEADLINE_MS,
                metrics,
              }),
            admit: async (tenant, record) => {
              const refusal = await admission.check(tenant, record);
              if (refusal) metrics.admissionRefusals.inc({ tenant, agent: record.id, reason: refusal.reason });
              return refusal;
            },
            reserveStream: (tenant, record) => {
              const release = streamSlots.reserve(tenant);
              if (release) return release;
              metrics.admissionRefusals.inc({ tenant, agent: record.id, reason: 'TOO_MANY_STREAMS' });
              return {
                httpStatus: 429,
                reason: 'TOO_MANY_STREAMS',
                message: `tenant "${tenant}" has ${streamSlots.maxPerTenant} streams open, the most allowed; close one or retry later`,
                retryAfterSeconds: config.DISPATCHER_RETRY_AFTER_S,
              };
            },
          }),
        );
        nest.use('/a2a', a2aBodyErrorHandler(config.DISPATCHER_BODY_LIMIT, logger));
      },
    });
    stops.push(async () => void (await app.close()));
    const url = `http://localhost:${(app.getHttpServer().address() as { port: number }).port}`;
    if (!config.DISPATCHER_PUBLIC_URL) publicUrl = url;
    return { url, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
