import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The remote A2A task a bridged execution created (libs/agent-runtime/src/remote): recorded as soon
 * as the remote names it, so a takeover or a redelivered command resumes that task instead of
 * sending again, and a follow-up turn continues it. Null for agents run in the worker itself.
 */
export class RemoteTasks1765300000000 implements MigrationInterface {
  name = 'RemoteTasks1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents.executions ADD COLUMN remote_task_id text, ADD COLUMN remote_context_id text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents.executions DROP COLUMN remote_task_id, DROP COLUMN remote_context_id`);
  }
}
