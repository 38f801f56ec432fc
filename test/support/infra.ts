import { after } from 'node:test';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase, dropDatabase } from '@mesh/database';

/** The per-run settings scripts/run-tests.mjs provides to integration specs. */
export function testRun(): { run: string; brokers: string[]; topicPrefix: string; databaseUrl: string } {
  const run = process.env.MESH_TEST_RUN;
  if (!run || !process.env.DATABASE_URL || !process.env.KAFKA_BROKERS) {
    throw new Error('integration specs run through `npm test` (scripts/run-tests.mjs), which starts Kafka and names the test database');
  }
  return {
    run,
    brokers: process.env.KAFKA_BROKERS.split(','),
    topicPrefix: process.env.TOPIC_PREFIX ?? `t${run}.`,
    databaseUrl: process.env.DATABASE_URL,
  };
}

/** A topic prefix unique to one spec (and label) within the run. */
export function uniquePrefix(label: string): string {
  const h = createHash('sha1').update(`${label}:${process.hrtime.bigint()}`).digest('hex').slice(0, 8);
  return `${testRun().topicPrefix}${h}.`;
}

/** A fresh, empty database for one spec, dropped when the spec file ends. */
export async function freshDatabase(label: string): Promise<string> {
  const url = new URL(testRun().databaseUrl);
  const suffix = createHash('sha1').update(`${label}:${process.hrtime.bigint()}`).digest('hex').slice(0, 8);
  url.pathname = `${url.pathname}_${suffix}`;
  const dbUrl = url.toString();
  await ensureDatabase(dbUrl);
  after(async () => {
    await dropDatabase(dbUrl).catch(() => undefined);
  });
  return dbUrl;
}

/** Runs one SQL query on a database (for assertions on what services stored). */
export async function sql<T extends Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Polls until `fn` returns a truthy value or the timeout passes (then throws with `what`). */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20000,
  everyMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < until) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}
