import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Message ids answered with an existing task (the same work still running) have no execution of
 * their own: retention finds every dedup row of a task by its id.
 */
export class DedupByTask1765700000000 implements MigrationInterface {
  name = 'DedupByTask1765700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS message_dedup_task_idx ON dispatcher.message_dedup (task_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS dispatcher.message_dedup_task_idx`);
  }
}
