// A team's Kafka principal: a SCRAM-SHA-512 user the broker stores (KIP-554), created and deleted
// over the AlterUserScramCredentials API as the admin principal. kafkajs has no such API; the
// low-level one of @platformatic/kafka speaks it on a single connection.
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import {
  Connection,
  ScramMechanisms,
  alterUserScramCredentialsV0,
  describeUserScramCredentialsV0,
  type SASLMechanismValue,
} from '@platformatic/kafka';
import { createKafka, logLevel } from '@mesh/bus';
import { CliError, ExitCode } from '../cli-error.js';

/** The broker and the principal this CLI acts as (an admin, to manage users and ACLs). */
export interface KafkaAdminTarget {
  brokers: string[];
  sasl?: { mechanism: 'scram-sha-512' | 'scram-sha-256' | 'plain'; username: string; password: string };
  ssl?: boolean;
}

/** RFC 7677 recommends at least 4096; Kafka accepts up to 16384. */
export const SCRAM_ITERATIONS = 8192;

/**
 * The SaltedPassword of RFC 5802 (Hi(password, salt, i) = PBKDF2 with HMAC-SHA-512 here): what the
 * broker stores, with the salt, instead of the password.
 */
export function saltedPassword(password: string, salt: Buffer, iterations = SCRAM_ITERATIONS): Buffer {
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 64, 'sha512');
}

/** A random password for a principal (only ever written to the team's env file). */
export const randomPassword = () => randomBytes(32).toString('base64url');

const MECHANISM_NAME = { 'scram-sha-512': 'SCRAM-SHA-512', 'scram-sha-256': 'SCRAM-SHA-256', plain: 'PLAIN' } as const;

async function withConnection<T>(t: KafkaAdminTarget, fn: (c: Connection) => Promise<T>): Promise<T> {
  const [first] = t.brokers;
  const at = first?.lastIndexOf(':') ?? -1;
  if (!first || at < 1) throw new CliError(`no Kafka broker to reach (got "${t.brokers.join(',')}")`, ExitCode.usage);
  const connection = new Connection('mesh-cli-teams', {
    connectTimeout: 5000,
    requestTimeout: 15000,
    ...(t.sasl
      ? {
          sasl: { mechanism: MECHANISM_NAME[t.sasl.mechanism] as SASLMechanismValue, username: t.sasl.username, password: t.sasl.password },
        }
      : {}),
    ...(t.ssl ? { tls: {} } : {}),
  });
  try {
    await connection.connect(first.slice(0, at), Number(first.slice(at + 1)));
    return await fn(connection);
  } catch (err) {
    if (err instanceof CliError) throw err;
    if (causes(err).some((e) => (e as { code?: string }).code === 'PLT_KFK_AUTHENTICATION'))
      throw new CliError(
        `Kafka at ${first} refused the admin principal ${t.sasl?.username ?? '(none)'}: SASL authentication failed (check KAFKA_USERNAME and KAFKA_PASSWORD)`,
      );
    throw new CliError(
      `Kafka at ${first}: ${describeKafkaError(err)}`,
      /connect|ECONNREFUSED|timed? ?out/i.test(String(err)) ? ExitCode.unreachable : ExitCode.failed,
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** `err` and its causes, outermost first. */
function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e: unknown = err; e && out.length < 10; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/** The per-user results of a response that carried error codes (the client throws them). */
function failedResults(err: unknown): Array<{ user: string; errorCode: number; errorMessage: string | null }> | undefined {
  const results = (err as { response?: { results?: unknown } }).response?.results;
  return Array.isArray(results) ? (results as Array<{ user: string; errorCode: number; errorMessage: string | null }>) : undefined;
}

function describeKafkaError(err: unknown): string {
  const nested = (err as { errors?: Array<{ apiId?: string; serverErrorMessage?: string | null; message?: string }> }).errors;
  if (Array.isArray(nested) && nested.length > 0)
    return nested.map((e) => [e.apiId ?? e.message, e.serverErrorMessage].filter(Boolean).join(': ')).join('; ');
  return err instanceof Error ? err.message : String(err);
}

/** Kafka's RESOURCE_NOT_FOUND: the user has no SCRAM credential. */
const RESOURCE_NOT_FOUND = 91;

/** True when `username` has a SCRAM credential on the broker. */
export async function scramUserExists(t: KafkaAdminTarget, username: string): Promise<boolean> {
  return withConnection(t, async (c) => {
    try {
      const res = await describeUserScramCredentialsV0.api.async(c, [{ name: username }]);
      return res.results.some((r) => r.user === username && r.credentialInfos.length > 0);
    } catch (err) {
      const results = failedResults(err);
      if (results?.every((r) => r.errorCode === RESOURCE_NOT_FOUND)) return false;
      throw err;
    }
  });
}

/** Stores a SCRAM-SHA-512 credential for `username` (a new salt; the password is never sent). */
export async function upsertScramUser(t: KafkaAdminTarget, username: string, password: string): Promise<void> {
  const salt = randomBytes(32);
  await withConnection(t, async (c) => {
    try {
      await alterUserScramCredentialsV0.api.async(
        c,
        [],
        [
          {
            name: username,
            mechanism: ScramMechanisms.SCRAM_SHA_512,
            iterations: SCRAM_ITERATIONS,
            salt,
            saltedPassword: saltedPassword(password, salt),
          },
        ],
      );
    } catch (err) {
      throw new CliError(`Kafka refused to create the SCRAM user ${username}: ${describeKafkaError(err)}`);
    }
  });
}

/** Deletes `username`'s SCRAM-SHA-512 credential; false when it had none. */
export async function deleteScramUser(t: KafkaAdminTarget, username: string): Promise<boolean> {
  return withConnection(t, async (c) => {
    try {
      await alterUserScramCredentialsV0.api.async(c, [{ name: username, mechanism: ScramMechanisms.SCRAM_SHA_512 }], []);
      return true;
    } catch (err) {
      const results = failedResults(err);
      if (results?.every((r) => r.errorCode === 0 || r.errorCode === RESOURCE_NOT_FOUND)) return false;
      throw new CliError(`Kafka refused to delete the SCRAM user ${username}: ${describeKafkaError(err)}`);
    }
  });
}

/** Whether `username`/`password` can log in (SCRAM-SHA-512 through kafkajs, as a worker would). */
export async function scramLoginWorks(brokers: string[], username: string, password: string, ssl = false): Promise<boolean> {
  const kafka = createKafka(
    { brokers, clientId: 'mesh-cli-login-check', sasl: { mechanism: 'scram-sha-512', username, password }, ssl },
    { retry: { retries: 0 }, logLevel: logLevel.NOTHING },
  );
  const admin = kafka.admin();
  try {
    await admin.connect();
    // Connecting is lazy in places: one request proves the handshake passed.
    await admin.describeCluster();
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === 'KafkaJSSASLAuthenticationError' || /SASL|authenticat/i.test(String(err))) return false;
    throw err;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Waits until the new credential logs in (the controller propagates it to the brokers shortly). */
export async function awaitScramLogin(t: KafkaAdminTarget, username: string, password: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await scramLoginWorks(t.brokers, username, password, t.ssl)) return;
    if (Date.now() > until) throw new CliError(`the new SCRAM user ${username} still cannot log in after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
