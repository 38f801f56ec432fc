import { Kafka, logLevel, type KafkaConfig, type LogEntry, type logCreator, type SASLOptions } from 'kafkajs';
import { MeshError } from '@mesh/contract';
import { createLogger, type Logger } from '@mesh/telemetry';

// The kafkajs names an app needs to hold a client, so apps depend on the bus and never on kafkajs.
export type { Admin, Consumer, Kafka, Producer } from 'kafkajs';
export { logLevel } from 'kafkajs';

export interface KafkaConnectionOptions {
  brokers: string[];
  clientId: string;
  /** How long a first connection may take before start-up fails. */
  connectionTimeoutMs?: number;
  /** Overall retries for a request; start-up uses few so a wrong broker address fails fast. */
  retries?: number;
  /** Where kafkajs logs; without one, a logger named after the client writes to stderr (tools, tests). */
  logger?: Logger;
  /**
   * The process's Kafka principal (services pass `kafkaCredentials(config)`); unset: the
   * environment's KAFKA_USERNAME / KAFKA_PASSWORD / KAFKA_SASL_MECHANISM, so tools and tests
   * reach an authenticated local broker without threading them through.
   */
  sasl?: { mechanism: 'scram-sha-512' | 'scram-sha-256' | 'plain'; username: string; password: string };
  ssl?: boolean;
}

/** The SASL settings in `env` (KAFKA_USERNAME and KAFKA_PASSWORD; mechanism SCRAM-SHA-512 unless KAFKA_SASL_MECHANISM). */
export function saslFromEnv(env: NodeJS.ProcessEnv = process.env): KafkaConnectionOptions['sasl'] {
  const { KAFKA_USERNAME: username, KAFKA_PASSWORD: password } = env;
  if (!username || !password) return undefined;
  const mechanism = (env.KAFKA_SASL_MECHANISM ?? 'scram-sha-512') as NonNullable<KafkaConnectionOptions['sasl']>['mechanism'];
  return { mechanism, username, password };
}

/**
 * What kafkajs reports while a broker, a group coordinator or a new topic's leaders are still
 * coming up: it retries these itself, so they are start-up noise, not errors.
 */
const STARTUP_RETRIABLE = [
  /coordinator is loading/i,
  /coordinator is not available/i,
  /not the correct coordinator/i,
  /does not host this topic-partition/i,
  /not the leader for that topic-partition/i,
  /no leader for this topic-partition/i,
  /leader.not.available/i,
  /group is rebalancing/i,
  /^Restarting the consumer in \d+ms$/,
];

/** True for a kafkajs log entry that only says a retriable start-up condition is being retried. */
export function isStartupRetriable(log: LogEntry['log']): boolean {
  const text = `${log.message} ${typeof log.error === 'string' ? log.error : ''}`;
  return STARTUP_RETRIABLE.some((re) => re.test(log.message) || re.test(text));
}

/**
 * kafkajs logs into `logger` (as `src: kafkajs`), one line per entry: retriable start-up
 * conditions at debug without their stack, the rest at its own level.
 */
export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ src: 'kafkajs' });
  return () =>
    ({ namespace, level, log: entry }: LogEntry) => {
      const { message, timestamp: _timestamp, stack, ...extra } = entry as LogEntry['log'] & { stack?: string };
      if (isStartupRetriable(entry)) {
        log.debug({ namespace, ...extra }, message);
        return;
      }
      const at = level <= logLevel.ERROR ? 'error' : level === logLevel.WARN ? 'warn' : level === logLevel.INFO ? 'info' : 'debug';
      log[at]({ namespace, ...extra, ...(stack ? { stack } : {}) }, message);
    };
}

/** A kafkajs client configured the platform's way. */
export function createKafka(opts: KafkaConnectionOptions, overrides: Partial<KafkaConfig> = {}): Kafka {
  const sasl = opts.sasl ?? saslFromEnv();
  return new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    ...(sasl ? { sasl: sasl as SASLOptions } : {}),
    ...((opts.ssl ?? process.env.KAFKA_SSL === 'true') ? { ssl: true } : {}),
    connectionTimeout: opts.connectionTimeoutMs ?? 3000,
    requestTimeout: 30000,
    retry: { retries: opts.retries ?? 8, initialRetryTime: 100, maxRetryTime: 5000 },
    logLevel: process.env.KAFKAJS_LOG === 'debug' ? logLevel.DEBUG : logLevel.ERROR,
    logCreator: kafkaLogCreator(opts.logger ?? createLogger(opts.clientId, undefined, process.stderr)),
    ...overrides,
  });
}

/**
 * Fails with one clear line when no broker answers, instead of retrying forever; a broker that
 * refuses the principal is named with it, and the settings to check.
 */
export async function assertKafkaReachable(opts: KafkaConnectionOptions): Promise<void> {
  const admin = createKafka({ ...opts, retries: 2 }, { logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
  } catch (cause) {
    throw kafkaStartError(opts.brokers, opts.sasl ?? saslFromEnv(), cause);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** What a failed first connection means, as one line naming the broker (and the principal it refused). */
export function kafkaStartError(brokers: string[], sasl: KafkaConnectionOptions['sasl'], cause: unknown): MeshError {
  const at = brokers.join(',');
  const msg = cause instanceof Error ? cause.message : String(cause);
  const name = cause instanceof Error ? cause.name : '';
  const type = (cause as { type?: unknown } | undefined)?.type;
  if (sasl && name === 'KafkaJSSASLAuthenticationError')
    return new MeshError(
      'UNAUTHENTICATED',
      `Kafka at ${at} refused principal ${sasl.username}: authentication failed (check KAFKA_USERNAME/KAFKA_PASSWORD)`,
      { cause },
    );
  if (sasl && type === 'UNSUPPORTED_SASL_MECHANISM')
    return new MeshError(
      'UNAUTHENTICATED',
      `Kafka at ${at} refused principal ${sasl.username}: the broker does not offer ${sasl.mechanism.toUpperCase()} (check KAFKA_SASL_MECHANISM)`,
      { cause },
    );
  // A SASL listener closes a connection that speaks Kafka without authenticating first.
  const hint =
    !sasl && name === 'KafkaJSConnectionClosedError' ? ' (the broker may require authentication: set KAFKA_USERNAME/KAFKA_PASSWORD)' : '';
  return new MeshError('UNAVAILABLE', `cannot reach Kafka at ${at}: ${msg}${hint}`, { cause, retryable: true });
}

/** Readiness probe over a long-lived admin client. */
export class KafkaProbe {
  readonly name = 'kafka';
  private readonly admin;
  private connected?: Promise<void>;

  constructor(kafka: Kafka) {
    this.admin = kafka.admin();
  }

  async check(): Promise<void> {
    this.connected ??= this.admin.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    await this.connected;
    await this.admin.describeCluster();
  }

  async close(): Promise<void> {
    await this.admin.disconnect().catch(() => undefined);
  }
}
