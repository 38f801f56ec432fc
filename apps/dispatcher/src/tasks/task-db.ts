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
  /** The current turn is failed if no worker has started it by then (see TaskService.failOverdue). */
  start_by_at?: Date | null;
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

/** One new task as insertNewTasks writes it: dedup claim, task, first execution, outbox command, push config. */
export interface NewTaskRow {
  tenant: string;
  agent_id: string;
  message_id: string;
  content_hash: string;
  task_id: string;
  context_id: string;
  state: string;
  status_timestamp: string;
  task: Json;
  execution_id: string;
  topic: string;
  key: string;
  headers: Record<string, string>;
  value: string;
  work_hash: string | null;
  deadline_at: string | null;
  start_by_at: string | null;
  /** The push config given with the message (null: none), stored with the task. */
  push_id: string | null;
  push_url: string | null;
  push_token: string | null;
  push_auth_scheme: string | null;
  push_auth_credentials: string | null;
}

/**
 * Writes new tasks in one statement (data-modifying CTEs run atomically, in one round trip and
 * one commit): each row's dedup claim on (tenant, agent, messageId), then — only for the claims
 * won — the task, its execution and its outbox command. Returns per row whether it was created;
 * a lost claim (an earlier or concurrent twin, also within the batch) writes nothing. (Every
 * data-modifying CTE runs to completion whether or not the final SELECT reads it.)
 */
export async function insertNewTasks(ds: DataSource, rows: NewTaskRow[]): Promise<boolean[]> {
  const won = await preparedQuery<{ task_id: string }>(
    ds,
    'dispatcher-accept-new',
    `WITH v AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(
         tenant text, agent_id text, message_id text, content_hash text, task_id text, context_id text, state text,
         status_timestamp timestamptz, task jsonb, execution_id text, topic text, key text, headers jsonb, value text,
         work_hash text, deadline_at timestamptz, start_by_at timestamptz, push_id text, push_url text, push_token text, push_auth_scheme text,
         push_auth_credentials text, ord int)),
     d AS (
       INSERT INTO dispatcher.message_dedup (tenant, agent_id, message_id, content_hash, task_id, turn)
       SELECT tenant, agent_id, message_id, content_hash, task_id, 1 FROM v ORDER BY ord
       ON CONFLICT DO NOTHING RETURNING task_id),
     t AS (
       INSERT INTO dispatcher.tasks (id, tenant, agent_id, context_id, state, turn, status_timestamp, task, work_hash, deadline_at, start_by_at)
       SELECT v.task_id, v.tenant, v.agent_id, v.context_id, v.state, 1, v.status_timestamp, v.task, v.work_hash, v.deadline_at, v.start_by_at
       FROM v JOIN d ON d.task_id = v.task_id RETURNING id),
     e AS (
       INSERT INTO dispatcher.executions (execution_id, task_id, tenant, turn, message_id)
       SELECT v.execution_id, v.task_id, v.tenant, 1, v.message_id FROM v JOIN t ON t.id = v.task_id RETURNING task_id),
     o AS (
       INSERT INTO dispatcher.outbox (topic, key, headers, value, agent_id)
       SELECT v.topic, v.key, v.headers, v.value, v.agent_id FROM v JOIN e ON e.task_id = v.task_id ORDER BY v.ord RETURNING 1),
     p AS (
       INSERT INTO dispatcher.push_configs (tenant, task_id, id, url, token, auth_scheme, auth_credentials)
       SELECT v.tenant, v.task_id, v.push_id, v.push_url, v.push_token, v.push_auth_scheme, v.push_auth_credentials
       FROM v JOIN t ON t.id = v.task_id WHERE v.push_url IS NOT NULL RETURNING 1)
     SELECT task_id FROM e`,
    [JSON.stringify(rows.map((r, ord) => ({ ...r, ord })))],
  );
  const created = new Set(won.map((w) => w.task_id));
  return rows.map((r) => created.has(r.task_id));
}
