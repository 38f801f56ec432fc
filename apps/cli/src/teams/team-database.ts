// A team's own Postgres database, owned by a LOGIN role of its own: the worker keeps its ledgers
// there (schema `agents`) and holds no credential of the platform's database.
import pg from 'pg';
import { CliError, ExitCode } from '../cli-error.js';

/** The maintenance database of the server `adminUrl` names: CREATE DATABASE runs outside any other. */
function maintenanceUrl(adminUrl: string): string {
  let url: URL;
  try {
    url = new URL(adminUrl);
  } catch {
    throw new CliError('the admin database URL is not a URL (--database-admin-url or DATABASE_URL)', ExitCode.usage);
  }
  if (!/^postgres(ql)?:$/.test(url.protocol))
    throw new CliError(`the admin database URL must be postgres://…, not ${url.protocol}//…`, ExitCode.usage);
  url.pathname = '/postgres';
  return url.toString();
}

/** The host part of a URL, for messages (never its password). */
const serverOf = (adminUrl: string) => {
  try {
    const u = new URL(adminUrl);
    return `${u.hostname}:${u.port || 5432}`;
  } catch {
    return '(invalid URL)';
  }
};

async function withAdmin<T>(adminUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: maintenanceUrl(adminUrl), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    throw new CliError(`cannot reach Postgres at ${serverOf(adminUrl)}: ${(err as Error).message}`, ExitCode.unreachable);
  }
  try {
    return await fn(client);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`Postgres at ${serverOf(adminUrl)}: ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Which of the team's database and role already exist. */
export async function existingTeamDatabase(
  adminUrl: string,
  database: string,
  role: string,
): Promise<{ database: boolean; role: boolean }> {
  return withAdmin(adminUrl, async (c) => ({
    database: (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount! > 0,
    role: (await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount! > 0,
  }));
}

/**
 * Creates the LOGIN role `role` (nothing more: no superuser, no CREATEDB/CREATEROLE) and the
 * database `database` it owns, which no one else may connect to; returns the URL the team uses.
 * What this call created is dropped again when a later step of it fails.
 */
export async function createTeamDatabase(adminUrl: string, database: string, role: string, password: string): Promise<string> {
  await withAdmin(adminUrl, async (c) => {
    const r = c.escapeIdentifier(role);
    const d = c.escapeIdentifier(database);
    await c.query(`CREATE ROLE ${r} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${c.escapeLiteral(password)}`);
    try {
      await c.query(`CREATE DATABASE ${d} OWNER ${r}`);
      // PUBLIC may connect to a new database by default: only its owner (and superusers) may.
      await c.query(`REVOKE ALL ON DATABASE ${d} FROM PUBLIC`);
    } catch (err) {
      await c.query(`DROP DATABASE IF EXISTS ${d}`).catch(() => undefined);
      await c.query(`DROP ROLE IF EXISTS ${r}`).catch(() => undefined);
      throw err;
    }
  });
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(role);
  url.password = encodeURIComponent(password);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Drops the team's database and role (undoing a create that failed later; revoke keeps both). */
export async function dropTeamDatabase(adminUrl: string, database: string, role: string): Promise<void> {
  await withAdmin(adminUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(database)} WITH (FORCE)`);
    await c.query(`DROP ROLE IF EXISTS ${c.escapeIdentifier(role)}`);
  });
}
