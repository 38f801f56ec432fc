import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Executions and stream events are written only in the statement that inserts or updates their
 * task (the accept, the projection, CancelTask, deadlines), so their task always exists; their
 * foreign keys re-checked it for every row — a `SELECT … FOR KEY SHARE` on the task, planned
 * anew each time (connections plan at each execution, see @mesh/database) and logged as a row
 * lock: about a quarter of Postgres' time per accepted and projected task. Retention deletes them
 * with their task (TaskRepository.deleteSettled) instead of the cascade. Push configs, written by
 * callers at any time, keep theirs.
 */
export class TaskChildrenUnchecked1765500000000 implements MigrationInterface {
  name = 'TaskChildrenUnchecked1765500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.executions DROP CONSTRAINT executions_task_id_fkey`);
    await q.query(`ALTER TABLE dispatcher.task_events DROP CONSTRAINT task_events_task_id_fkey`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Rows whose task retention removed before this migration is undone would fail the check.
    await q.query(`DELETE FROM dispatcher.executions e WHERE NOT EXISTS (SELECT 1 FROM dispatcher.tasks t WHERE t.id = e.task_id)`);
    await q.query(`DELETE FROM dispatcher.task_events e WHERE NOT EXISTS (SELECT 1 FROM dispatcher.tasks t WHERE t.id = e.task_id)`);
    await q.query(
      `ALTER TABLE dispatcher.executions ADD CONSTRAINT executions_task_id_fkey FOREIGN KEY (task_id) REFERENCES dispatcher.tasks(id) ON DELETE CASCADE`,
    );
    await q.query(
      `ALTER TABLE dispatcher.task_events ADD CONSTRAINT task_events_task_id_fkey FOREIGN KEY (task_id) REFERENCES dispatcher.tasks(id) ON DELETE CASCADE`,
    );
  }
}
