import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Part 2: the work hash of a task's first message (same-work dedup while it runs) and the
 * deadline budget recorded with the task.
 */
export class WorkHashAndDeadline1764600000000 implements MigrationInterface {
  name = 'WorkHashAndDeadline1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.tasks ADD COLUMN work_hash text, ADD COLUMN deadline_at timestamptz`);
    await q.query(`CREATE INDEX tasks_work_idx ON dispatcher.tasks (tenant, agent_id, context_id, work_hash) WHERE work_hash IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX dispatcher.tasks_work_idx`);
    await q.query(`ALTER TABLE dispatcher.tasks DROP COLUMN work_hash, DROP COLUMN deadline_at`);
  }
}
