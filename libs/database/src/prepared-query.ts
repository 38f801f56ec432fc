/** Anything that runs a parameterised query: a TypeORM DataSource, or a unit test's stand-in. */
export interface SqlRunner {
  query(text: string, params?: unknown[]): Promise<unknown>;
}

/**
 * The rows of a {@link SqlRunner}'s result: TypeORM returns `[rows, count]` for UPDATE/DELETE and
 * rows otherwise; a pg pool or client returns `{ rows }`.
 */
export function rowsOf<T>(result: unknown): T[] {
  if (!Array.isArray(result)) return ((result as { rows?: T[] } | null | undefined)?.rows ?? []) as T[];
  return (result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? result[0] : result) as T[];
}

interface NamedQueryClient {
  query(q: string | { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
  release(err?: Error): void;
}

interface NamedQueryPool {
  connect(): Promise<NamedQueryClient>;
  /** The pool's settings: `replanAfterMs` as serviceDataSource passes it (unset: REPLAN_AFTER_MS). */
  options?: { replanAfterMs?: number };
}

/** How long a connection uses the plans Postgres cached for its named statements before planning them anew. */
export const REPLAN_AFTER_MS = 10_000;

/** When each pooled connection last dropped its cached plans (or first ran a named statement). */
const plannedAt = new WeakMap<object, number>();

/** The pg pool under a TypeORM DataSource (its driver's `master`), if `sql` is one. */
function poolOf(sql: SqlRunner): NamedQueryPool | undefined {
  const master = (sql as { driver?: { master?: unknown } }).driver?.master;
  return master && typeof (master as NamedQueryPool).connect === 'function' ? (master as NamedQueryPool) : undefined;
}

/**
 * Runs a hot statement as a named prepared statement straight on the data source's pg pool:
 * Postgres parses and analyses it once per connection instead of at every call and, after five
 * executions, reuses a generic plan instead of planning each one (planning took over a third of
 * the dispatcher's batched CTEs' time in Postgres, paid per batch, so per process). A cached plan is
 * kept only `REPLAN_AFTER_MS` on a connection (`replanAfterMs` of serviceDataSource): then the
 * connection drops its plans (`DISCARD PLANS`) and the next executions plan for the tables as they
 * are now — a plan made while a table was small would otherwise scan it whole until the next
 * ANALYZE (`test/foundation/prepared-plans`). `name` must stand for this `text` alone in the process
 * (pg refuses one name for two texts). Only for statements that name their result columns: a
 * prepared `SELECT *` fails once a migration adds a column. A runner without a pg pool (a unit
 * test's stand-in) runs the text as a plain query.
 */
export async function preparedQuery<R>(sql: SqlRunner, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = poolOf(sql);
  if (!pool) return rowsOf<R>(await sql.query(text, values));
  const client = await pool.connect();
  try {
    const now = Date.now();
    const since = plannedAt.get(client);
    if (since === undefined) plannedAt.set(client, now);
    else if (now - since >= (pool.options?.replanAfterMs ?? REPLAN_AFTER_MS)) {
      await client.query('DISCARD PLANS');
      plannedAt.set(client, now);
    }
    const { rows } = await client.query({ name, text, values });
    client.release();
    return rows as R[];
  } catch (err) {
    // As pg's pool.query does: a connection whose query failed is closed, not reused.
    client.release(err as Error);
    throw err;
  }
}
