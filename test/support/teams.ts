// `mesh teams` run as a process (as an operator runs it) against the run's authenticated broker and
// Postgres, and the clean-up of what it created: principals, ACLs, team databases are cluster-wide.
import { after } from 'node:test';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import pg from 'pg';
import { createKafka, logLevel, type Kafka } from '@mesh/bus';
import { teamNames } from '@mesh/app-cli';
import { testRun } from './infra.js';

const bin = fileURLToPath(new URL('../../../apps/cli/dist/main.js', import.meta.url));

export interface MeshRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `mesh args…` as a process with the run's broker, admin principal and Postgres, and `env` on top. */
export function meshProcess(args: string[], env: Record<string, string> = {}): Promise<MeshRun> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [bin, ...args],
      {
        env: {
          ...process.env,
          KAFKA_BROKERS: testRun().brokers.join(','),
          // No developer's `npm start` settings leak in.
          MESH_LOCAL_ENV: join(tmpdir(), 'mesh-teams-no-local.env'),
          DATABASE_URL: testRun().databaseUrl,
          ...env,
        },
      },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    ),
  );
}

/** A team name unique to this run (SCRAM users and databases are shared by every run on the machine). */
export function uniqueTeamName(label: string): string {
  return `${label}-${createHash('sha1').update(`${testRun().run}:${label}:${process.hrtime.bigint()}`).digest('hex').slice(0, 8)}`;
}

/** A folder for env files. */
export const envFolder = () => mkdtemp(join(tmpdir(), 'mesh-teams-'));

export const readEnvFile = (path: string) => ({ ...parseEnv(readFileSync(path, 'utf8')) }) as Record<string, string>;

/** Drops what `mesh teams create <name>` may have left when the spec file ends: ACLs, SCRAM user (revoke), database, role. */
export function cleanUpTeamAtEnd(name: string, prefix: string): void {
  after(async () => {
    await meshProcess(['teams', 'revoke', name, '--no-dispatcher'], { TOPIC_PREFIX: prefix });
    const n = teamNames(name);
    const url = new URL(testRun().databaseUrl);
    url.pathname = '/postgres';
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(n.database)} WITH (FORCE)`);
      await c.query(`DROP ROLE IF EXISTS ${c.escapeIdentifier(n.role)}`);
    } finally {
      await c.end();
    }
  });
}

/** Creates team `name` with `mesh teams create … --no-dispatcher`; returns its env file's settings. */
export async function createTeam(
  name: string,
  opts: { tenant: string; agents: string[]; prefix: string; dir: string },
): Promise<{ file: string; env: Record<string, string>; run: MeshRun }> {
  cleanUpTeamAtEnd(name, opts.prefix);
  const file = join(opts.dir, `${name}.env`);
  const run = await meshProcess(
    ['teams', 'create', name, '--tenant', opts.tenant, ...opts.agents.flatMap((a) => ['--agent', a]), '--out', file, '--no-dispatcher'],
    { TOPIC_PREFIX: opts.prefix },
  );
  if (run.code !== 0) throw new Error(`mesh teams create ${name} exited ${run.code}: ${run.err}`);
  return { file, env: readEnvFile(file), run };
}

/** A kafkajs client of the platform's making (`createKafka` of @mesh/bus) logged in with a team env file's principal. */
export function teamKafka(
  env: Record<string, string>,
  clientId: string,
  onLog?: (entry: { message: string; error?: unknown }) => void,
): Kafka {
  return createKafka(
    {
      brokers: env.KAFKA_BROKERS!.split(','),
      clientId,
      sasl: { mechanism: 'scram-sha-512', username: env.KAFKA_USERNAME!, password: env.KAFKA_PASSWORD! },
      // The idempotent producer needs retries; few, so a refusal is seen quickly.
      retries: 2,
    },
    {
      logLevel: onLog ? logLevel.DEBUG : logLevel.NOTHING,
      ...(onLog ? { logCreator: () => (e: { log: { message: string; error?: unknown } }) => onLog(e.log) } : {}),
    },
  );
}

/** Whether a principal logs in (one request after the SASL handshake). */
export async function canLogIn(env: Record<string, string>): Promise<boolean> {
  const admin = teamKafka(env, 'login-check').admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    return true;
  } catch (err) {
    if (/SASL|authenticat/i.test(String(err)) || (err as { name?: string }).name === 'KafkaJSSASLAuthenticationError') return false;
    throw err;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
