import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The time by which a worker must have started the current turn (its run command carries it as
 * `start_by_unix_ms`), and the lifecycle sweep's index over turns still waiting for a worker.
 */
export class StartBy1765000000000 implements MigrationInterface {
  name = 'StartBy1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.tasks ADD COLUMN start_by_at timestamptz`);
    await q.query(
      `CREATE INDEX tasks_not_started_idx ON dispatcher.tasks (start_by_at) WHERE start_by_at IS NOT NULL AND state = 'TASK_STATE_SUBMITTED'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX dispatcher.tasks_not_started_idx`);
    await q.query(`ALTER TABLE dispatcher.tasks DROP COLUMN start_by_at`);
  }
}
