import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The W3C trace context each turn ran under, so an operator looking at a task (the console's task
 * detail) can open its trace; and an index for the ops task list, newest first.
 */
export class ExecutionTraceparent1765200000000 implements MigrationInterface {
  name = 'ExecutionTraceparent1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents.executions ADD COLUMN traceparent text`);
    await q.query(`CREATE INDEX executions_updated_idx ON agents.executions (updated_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX agents.executions_updated_idx`);
    await q.query(`ALTER TABLE agents.executions DROP COLUMN traceparent`);
  }
}
