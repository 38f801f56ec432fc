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

interface NamedQueryPool {
  query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/** The pg pool under a TypeORM DataSource (its driver's `master`), if `sql` is one. */
function poolOf(sql: SqlRunner): NamedQueryPool | undefined {
  const master = (sql as { driver?: { master?: unknown } }).driver?.master;
  return master && typeof (master as NamedQueryPool).query === 'function' ? (master as NamedQueryPool) : undefined;
}

/**
 * Runs a hot statement as a named prepared statement straight on the data source's pg pool:
 * Postgres parses and analyses it once per connection instead of at every call, and still plans
 * it at each execution (serviceDataSource: a cached plan would outlive the table sizes it was made
 * for). `name` must stand for this `text` alone in the process (pg refuses one name for two texts).
 * Only for statements that name their result columns: a prepared `SELECT *` fails once a migration
 * adds a column. A runner without a pg pool (a unit test's stand-in) runs the text as a plain query.
 */
export async function preparedQuery<R>(sql: SqlRunner, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = poolOf(sql);
  if (!pool) return rowsOf<R>(await sql.query(text, values));
  return (await pool.query({ name, text, values })).rows as R[];
}
