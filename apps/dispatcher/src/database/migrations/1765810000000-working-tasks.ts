import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * WORKING tasks by their last change: the delegation sweep looks there, every second, for
 * delegating turns whose wait was never recorded (docs/agents.md, "Delegation").
 */
export class WorkingTasks1765810000000 implements MigrationInterface {
  name = 'WorkingTasks1765810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX tasks_working_idx ON dispatcher.tasks (updated_at) WHERE state = 'TASK_STATE_WORKING'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX dispatcher.tasks_working_idx`);
  }
}
