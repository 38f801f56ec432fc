import type { DataSource, QueryRunner } from 'typeorm';

/** A JSON object as stored in jsonb. */
export type Json = Record<string, unknown>;

/** A row of `dispatcher.tasks`. */
export interface TaskRow {
  id: string;
  tenant: string;
  agent_id: string;
  context_id: string;
  state: string;
  turn: number;
  /** Bumped by every write; the projector's compare-and-set reads it. */
  version: number;
  status_timestamp: Date;
  task: Json;
  /** The task's deadline budget: every turn and retry draws from it. */
  deadline_at?: Date | null;
}

/** Runs `work` in one transaction; rolls back on any error. */
export async function inTransaction<T>(ds: DataSource, work: (q: QueryRunner) => Promise<T>): Promise<T> {
  const q = ds.createQueryRunner();
  await q.connect();
  await q.startTransaction(); // READ COMMITTED, the server default
  try {
    const out = await work(q);
    await q.commitTransaction();
    return out;
  } catch (err) {
    await q.rollbackTransaction().catch(() => undefined);
    throw err;
  } finally {
    await q.release();
  }
}

/** Loads and locks a task of `tenant` (and `agentId` when given); undefined when there is none. */
export async function lockTask(q: QueryRunner, taskId: string, tenant: string, agentId?: string): Promise<TaskRow | undefined> {
  const rows: TaskRow[] = await q.query(
    `SELECT * FROM dispatcher.tasks WHERE id = $1 AND tenant = $2 ${agentId ? 'AND agent_id = $3' : ''} FOR UPDATE`,
    agentId ? [taskId, tenant, agentId] : [taskId, tenant],
  );
  return rows[0];
}

/**
 * Runs one of the hot statements (accept, projection) as a named prepared statement straight on
 * the driver's pool: Postgres parses and plans it once per connection instead of per call.
 */
export async function preparedQuery<R>(ds: DataSource, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = (ds.driver as unknown as { master: { query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[] }> } })
    .master;
  return (await pool.query({ name, text, values })).rows;
}
