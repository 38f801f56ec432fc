import pg from 'pg';
import { DataSource, type MixedList, type EntitySchema } from 'typeorm';
import { MeshError } from '@mesh/contract';

function describe(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || 5432}${u.pathname}`;
}

/** Turns a driver error into one line an operator can act on. */
export function databaseError(url: string, cause: unknown): MeshError {
  const msg = cause instanceof Error ? cause.message : String(cause);
  return new MeshError('UNAVAILABLE', `cannot use Postgres at ${describe(url)}: ${msg}`, { cause, retryable: true });
}

/** Creates the database named in `url` when it does not exist (safe when several processes race). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } catch (err) {
        // 42P04 duplicate_database: another process created it between our check and create.
        if ((err as { code?: string }).code !== '42P04') throw err;
      }
    }
  } catch (cause) {
    throw databaseError(url, cause);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Drops a database (tests only). */
export async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.slice(1));
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

export interface ServiceDataSourceOptions {
  url: string;
  /** Postgres schema owned by the service; its migrations table lives there too. */
  schema: string;
  entities: MixedList<Function | string | EntitySchema>;
  migrations: MixedList<Function | string>;
  poolSize?: number;
  /** How long a connection reuses the plans of its named statements (preparedQuery); tests shorten it. */
  replanAfterMs?: number;
}

/**
 * A pg client whose 'error' events never end the process. pg-pool hands a new client over without
 * its idle listener, and TypeORM attaches its own a microtask later: a FATAL that arrives in the
 * same read as the connect's ReadyForQuery (57P01 while Postgres shuts down for a restart) is
 * emitted with no listener, and an unlistened 'error' event ends Node. The client is dead either
 * way — its queries fail and the pool drops it on release — so the event is only kept from
 * crashing the service.
 */
export class GuardedClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

/** A TypeORM data source for one service's schema. `synchronize` is always off: migrations only. */
export function serviceDataSource(opts: ServiceDataSourceOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: opts.url,
    schema: opts.schema,
    entities: opts.entities,
    migrations: opts.migrations,
    migrationsTableName: `${opts.schema}_migrations`,
    migrationsRun: false,
    synchronize: false,
    logging: false,
    // Idle connections are kept a minute (pg's default is 10 s): a service whose load comes in bursts
    // would otherwise open its backends again at each one, a fork and a catalog warm-up apiece.
    extra: {
      max: opts.poolSize ?? 10,
      idleTimeoutMillis: 60_000,
      connectionTimeoutMillis: 5000,
      Client: GuardedClient,
      // Read by preparedQuery (its REPLAN_AFTER_MS when unset).
      replanAfterMs: opts.replanAfterMs,
    },
  });
}

/**
 * Creates the database if needed, initialises the data source and applies pending migrations
 * under an advisory lock, so replicas starting together never run them twice.
 */
export async function openServiceDatabase(opts: ServiceDataSourceOptions): Promise<DataSource> {
  const ds = serviceDataSource(opts);
  await initializeServiceDatabase(ds, opts);
  return ds;
}

/**
 * {@link openServiceDatabase} for a data source built beforehand with {@link serviceDataSource}
 * (an app that hands it to its modules before it connects).
 */
export async function initializeServiceDatabase(ds: DataSource, opts: Pick<ServiceDataSourceOptions, 'url' | 'schema'>): Promise<void> {
  await ensureDatabase(opts.url);
  try {
    await ds.initialize();
  } catch (cause) {
    throw databaseError(opts.url, cause);
  }
  await migrateUnderLock(ds, opts.schema);
}

/** Applies pending migrations while holding a session-level advisory lock keyed by the schema. */
export async function migrateUnderLock(ds: DataSource, schema: string): Promise<void> {
  const runner = ds.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock(hashtext($1))', [`agent-mesh:migrations:${schema}`]);
    await runner.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(schema)}`);
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [`agent-mesh:migrations:${schema}`]).catch(() => undefined);
    await runner.release();
  }
}

/** Readiness probe: the pool can run a query. */
export class PostgresProbe {
  readonly name = 'postgres';
  constructor(private readonly ds: DataSource) {}
  async check(): Promise<void> {
    await this.ds.query('SELECT 1');
  }
}
