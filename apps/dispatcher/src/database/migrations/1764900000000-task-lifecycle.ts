import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes of the lifecycle sweeps (TaskLifecycle): open tasks by deadline, settled tasks by last
 * change. Partial, so the hot path pays only for tasks that have a deadline or have settled.
 */
export class TaskLifecycle1764900000000 implements MigrationInterface {
  name = 'TaskLifecycle1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX tasks_open_deadline_idx ON dispatcher.tasks (deadline_at)
      WHERE deadline_at IS NOT NULL
        AND state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED')`);
    await q.query(`
      CREATE INDEX tasks_settled_idx ON dispatcher.tasks (updated_at)
      WHERE state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX dispatcher.tasks_settled_idx`);
    await q.query(`DROP INDEX dispatcher.tasks_open_deadline_idx`);
  }
}
