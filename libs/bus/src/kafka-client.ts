import { Kafka, logLevel, type KafkaConfig, type LogEntry } from 'kafkajs';
import { MeshError } from '@mesh/contract';

export interface KafkaConnectionOptions {
  brokers: string[];
  clientId: string;
  /** How long a first connection may take before start-up fails. */
  connectionTimeoutMs?: number;
  /** Overall retries for a request; start-up uses few so a wrong broker address fails fast. */
  retries?: number;
}

/** kafkajs logs go to stderr as one JSON line each, warnings and errors only. */
function logCreator() {
  return ({ level, log }: LogEntry) => {
    if (level > logLevel.WARN) return;
    const { message, ...extra } = log;
    process.stderr.write(
      `${JSON.stringify({ level: level === logLevel.ERROR ? 'error' : 'warn', src: 'kafkajs', msg: message, ...extra })}\n`,
    );
  };
}

/** A kafkajs client configured the platform's way. */
export function createKafka(opts: KafkaConnectionOptions, overrides: Partial<KafkaConfig> = {}): Kafka {
  return new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    connectionTimeout: opts.connectionTimeoutMs ?? 3000,
    requestTimeout: 30000,
    retry: { retries: opts.retries ?? 8, initialRetryTime: 100, maxRetryTime: 5000 },
    logLevel: process.env.KAFKAJS_LOG === 'debug' ? logLevel.DEBUG : logLevel.ERROR,
    logCreator,
    ...overrides,
  });
}

/** Fails with one clear line when no broker answers, instead of retrying forever. */
export async function assertKafkaReachable(opts: KafkaConnectionOptions): Promise<void> {
  const admin = createKafka({ ...opts, retries: 2 }, { logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
  } catch (cause) {
    const msg = cause instanceof Error ? cause.message : String(cause);
    throw new MeshError('UNAVAILABLE', `cannot reach Kafka at ${opts.brokers.join(',')}: ${msg}`, { cause, retryable: true });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
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
