import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cancels by execution id, recorded whether or not a turn of the execution runs yet: a claim that
 * finds one reports CANCELED without running the turn, a renewal that finds one aborts it. And the
 * indexes the ledgers' retention sweep reads by (finished executions by age, rows by task).
 */
export class CancellationsAndRetention1765100000000 implements MigrationInterface {
  name = 'CancellationsAndRetention1765100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agents.cancellations (
        execution_id text PRIMARY KEY,
        tenant text NOT NULL,
        task_id text NOT NULL,
        reason text,
        requested_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX cancellations_task_idx ON agents.cancellations (tenant, task_id)`);
    await q.query(`CREATE INDEX cancellations_requested_idx ON agents.cancellations (requested_at)`);
    await q.query(`CREATE INDEX executions_finished_idx ON agents.executions (finished_at) WHERE state = 'finished'`);
    await q.query(`CREATE INDEX tool_effects_task_idx ON agents.tool_effects (tenant, task_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX agents.tool_effects_task_idx`);
    await q.query(`DROP INDEX agents.executions_finished_idx`);
    await q.query(`DROP TABLE agents.cancellations`);
  }
}
