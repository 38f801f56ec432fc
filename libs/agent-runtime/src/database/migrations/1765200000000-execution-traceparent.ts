import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The W3C trace context each turn ran under, so an operator looking at a task (the console's task
 * detail) can open its trace. No index for the ops task list: renewals update `updated_at` on the
 * hot path, and an operator's occasional list may scan.
 */
export class ExecutionTraceparent1765200000000 implements MigrationInterface {
  name = 'ExecutionTraceparent1765200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents.executions ADD COLUMN traceparent text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents.executions DROP COLUMN traceparent`);
  }
}
