import 'reflect-metadata';
import type { JWK } from 'jose';
import { assertKafkaReachable, createKafka, KafkaProbe, logLevel } from '@mesh/bus';
import { kafkaCredentials, topicDefinitions } from '@mesh/config';
import { ConsumerGroups } from '@mesh/contract';
import { openServiceDatabase, PostgresProbe } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { createLogger, type Logger } from '@mesh/telemetry';
import { Authenticator } from '@mesh/auth';
import { AppModule } from './app.module.js';
import { authenticateBody } from './auth/auth.guard.js';
import { CardOutbox } from './card-stream/card-outbox.js';
import { CardReconciler } from './card-stream/card-reconciler.js';
import { KafkaCardStream } from './card-stream/kafka-card-stream.js';
import type { CardStream } from './card-stream/card-stream.port.js';
import { bodyParserErrors, ProblemFilter, sendProblem } from './common/problem.filter.js';
import { privateAnswers } from './common/private-answers.js';
import type { DirectoryConfig } from './config/directory.config.js';
import { directoryMigrations, DIRECTORY_SCHEMA } from './database/migrations/index.js';
import { ensureHeartbeatsTopic, HeartbeatConsumer } from './liveness/heartbeat-consumer.js';
import { LivenessService } from './liveness/liveness.service.js';
import { AgentVersionEntity } from './registry/agent-version.entity.js';
import { AgentEntity } from './registry/agent.entity.js';
import { TokenBucketLimiter } from './registry/rate-limiter.js';
import { CardSigner } from './signatures/card-signer.js';
import { CardVerifier, type TrustedKeys } from './signatures/card-verifier.js';

/** A running directory: `stop` drains and closes every connection. */
export interface RunningDirectory {
  url: string;
  /** Public JWK served cards are signed with (absent when no signing key is configured). */
  signingJwk?: JWK;
  /** Card changes committed but not yet on the cards topic (0 in steady state). */
  pendingCardRecords(): Promise<number>;
  stop(): Promise<void>;
}

/** Request bodies above this are refused (issue #4: 64 KiB). */
export const DIRECTORY_BODY_LIMIT_BYTES = 64 * 1024;

/** Replaceable parts (benchmarks, tests): by default everything talks to Kafka. */
export interface DirectoryOverrides {
  /** Command-topic creation and card publishing; default the Kafka adapter. */
  cardStream?: CardStream;
  /** The process's logger (runMain's); defaults to one named `directory` at LOG_LEVEL. */
  logger?: Logger;
}

/** Starts the directory: database (created and migrated), Kafka topics, HTTP API, heartbeat consumer, outbox. */
export async function startDirectory(config: DirectoryConfig, overrides: DirectoryOverrides = {}): Promise<RunningDirectory> {
  const logger = overrides.logger ?? createLogger('directory');
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-directory`, logger, ...kafkaCredentials(config) };
  await assertKafkaReachable(kafkaOpts);
  const signer = config.DIRECTORY_SIGNING_JWK
    ? await CardSigner.fromJwk(config.DIRECTORY_SIGNING_JWK as JWK)
    : config.DEMO
      ? await CardSigner.ephemeral()
      : undefined;
  const verifier = new CardVerifier({
    trusted: (config.DIRECTORY_TRUSTED_JWKS ?? {}) as TrustedKeys,
    requireSignedTenants: config.DIRECTORY_REQUIRE_SIGNED_TENANTS,
  });
  const definitions = topicDefinitions(config);

  const cleanups: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const ds = await openServiceDatabase({
      url: config.DATABASE_URL,
      schema: DIRECTORY_SCHEMA,
      entities: [AgentEntity, AgentVersionEntity],
      migrations: directoryMigrations,
    });
    cleanups.push(() => ds.destroy());
    const kafka = createKafka(kafkaOpts);
    // Admin calls poll just-created topics: a quiet client keeps kafkajs' transient "unknown topic" errors out of the logs.
    const adminKafka = createKafka(kafkaOpts, { logLevel: logLevel.NOTHING });
    let stream: CardStream;
    if (overrides.cardStream) {
      stream = overrides.cardStream;
    } else {
      const kafkaStream = new KafkaCardStream(kafka, { definitions, adminKafka });
      cleanups.push(() => kafkaStream.stop());
      await kafkaStream.start();
      stream = kafkaStream;
    }
    // Before the HTTP API takes heartbeats (it forwards them to the topic), whichever card stream runs.
    const ensureHeartbeats = () => ensureHeartbeatsTopic(adminKafka, definitions.heartbeats());
    await ensureHeartbeats();
    const kafkaProbe = new KafkaProbe(kafka);
    cleanups.push(() => kafkaProbe.close());
    const outbox = new CardOutbox(ds, stream, { sweepMs: 2000, logger });
    const limit = config.DIRECTORY_REGISTRATIONS_PER_MINUTE;

    const app = await startHttpService({
      logger,
      module: AppModule.forRoot({
        config,
        dataSource: ds,
        probes: [new PostgresProbe(ds), kafkaProbe],
        stream,
        outbox,
        verifier,
        signer,
        limiter: new TokenBucketLimiter(limit, limit),
        logger,
      }),
      port: config.DIRECTORY_PORT,
      host: config.HTTP_HOST,
      bodyLimit: `${DIRECTORY_BODY_LIMIT_BYTES}b`,
      // Every body the directory takes (registrations, updates, heartbeats) is a tenant's: a caller
      // without a credential is answered 401 before its body is read.
      authenticateBodies: (a) => {
        const authenticator = a.get(Authenticator);
        return {
          authenticate: (req) => authenticateBody(authenticator, req),
          // Refused before the routes' middleware: marked private here as their answers are.
          refuse: (req, res, reason) => privateAnswers(req, res, () => sendProblem(res, reason, logger)),
        };
      },
      configure: (a) => {
        a.use('/v1', privateAnswers);
        a.use(bodyParserErrors);
        a.useGlobalFilters(new ProblemFilter(logger));
      },
    });
    cleanups.push(() => app.close());

    // Re-publishes whatever a previous process committed but did not get onto the topic.
    outbox.start();
    cleanups.push(() => outbox.stop());
    // The database owns the agents: Kafka (a re-formatted broker, a lost topic) is brought in line
    // with it now and whenever a check finds the cards topic behind.
    const reconciler = new CardReconciler(ds, stream, outbox, {
      intervalMs: config.DIRECTORY_RECONCILE_INTERVAL_MS,
      logger,
      ensureOtherTopics: ensureHeartbeats,
    });
    cleanups.push(() => reconciler.stop());
    await reconciler.start();
    const consumer = new HeartbeatConsumer(
      kafka,
      definitions.heartbeats(),
      new ConsumerGroups(config.TOPIC_PREFIX).directoryHeartbeats(config.KAFKA_CLIENT_ID),
      app.get(LivenessService),
      logger,
    );
    cleanups.push(() => consumer.stop());
    await consumer.start();

    return {
      url: await app.getUrl(),
      signingJwk: signer?.publicJwk,
      pendingCardRecords: () => outbox.pending(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
