import { rowsOf, type SqlRunner } from '@mesh/database';

/** A task on a remote A2A agent. */
export interface RemoteTaskRef {
  taskId: string;
  contextId: string;
}

/** Where a bridged execution's remote task is recorded (columns of `agents.executions`). */
export interface RemoteTaskLedger {
  /** Records the remote task of a running execution; false when the execution is not running any more. */
  record(executionId: string, ref: RemoteTaskRef): Promise<boolean>;
  /** The remote task of this execution, when one was recorded. */
  of(executionId: string): Promise<RemoteTaskRef | undefined>;
  /** The remote task of the latest earlier turn of a task that had one (a follow-up continues it). */
  previous(tenant: string, taskId: string, beforeTurn: number): Promise<RemoteTaskRef | undefined>;
}

export class PostgresRemoteTaskLedger implements RemoteTaskLedger {
  constructor(private readonly sql: SqlRunner) {}

  async record(executionId: string, ref: RemoteTaskRef): Promise<boolean> {
    const r = rowsOf<{ execution_id: string }>(
      await this.sql.query(
        `UPDATE agents.executions SET remote_task_id = $2, remote_context_id = $3, updated_at = now()
         WHERE execution_id = $1 AND state = 'running' RETURNING execution_id`,
        [executionId, ref.taskId, ref.contextId],
      ),
    );
    return r.length > 0;
  }

  async of(executionId: string): Promise<RemoteTaskRef | undefined> {
    const [r] = rowsOf<{ remote_task_id: string | null; remote_context_id: string | null }>(
      await this.sql.query(`SELECT remote_task_id, remote_context_id FROM agents.executions WHERE execution_id = $1`, [executionId]),
    );
    return r?.remote_task_id ? { taskId: r.remote_task_id, contextId: r.remote_context_id ?? '' } : undefined;
  }

  async previous(tenant: string, taskId: string, beforeTurn: number): Promise<RemoteTaskRef | undefined> {
    const [r] = rowsOf<{ remote_task_id: string; remote_context_id: string | null }>(
      await this.sql.query(
        `SELECT remote_task_id, remote_context_id FROM agents.executions
         WHERE tenant = $1 AND task_id = $2 AND turn < $3 AND remote_task_id IS NOT NULL ORDER BY turn DESC LIMIT 1`,
        [tenant, taskId, beforeTurn],
      ),
    );
    return r ? { taskId: r.remote_task_id, contextId: r.remote_context_id ?? '' } : undefined;
  }
}
