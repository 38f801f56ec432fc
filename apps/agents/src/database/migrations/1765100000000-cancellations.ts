import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cancels by execution id, recorded whether or not a turn of the execution runs yet: a claim that
 * finds one reports CANCELED without running the turn, a renewal that finds one aborts it.
 */
export class Cancellations1765100000000 implements MigrationInterface {
  name = 'Cancellations1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agents.cancellations (
        execution_id text PRIMARY KEY,
        tenant text NOT NULL,
        task_id text NOT NULL,
        reason text,
        requested_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agents.cancellations`);
  }
}
