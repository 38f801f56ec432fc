import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tasks, their executions (one per turn, unique execution id), the message dedup ledger and the
 * transactional outbox of commands.
 */
export class CreateTasks1764500000000 implements MigrationInterface {
  name = 'CreateTasks1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE dispatcher.tasks (
        id text PRIMARY KEY,
        tenant text NOT NULL,
        agent_id text NOT NULL,
        context_id text NOT NULL,
        state text NOT NULL,
        turn integer NOT NULL,
        version integer NOT NULL DEFAULT 0,
        status_timestamp timestamptz NOT NULL,
        task jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX tasks_list_idx ON dispatcher.tasks (tenant, agent_id, status_timestamp DESC, id DESC)`);
    await q.query(`CREATE INDEX tasks_context_idx ON dispatcher.tasks (tenant, context_id)`);
    await q.query(`
      CREATE TABLE dispatcher.executions (
        execution_id text NOT NULL,
        task_id text NOT NULL REFERENCES dispatcher.tasks(id) ON DELETE CASCADE,
        tenant text NOT NULL,
        turn integer NOT NULL,
        message_id text NOT NULL,
        last_seq integer NOT NULL DEFAULT -1,
        artifact_count integer NOT NULL DEFAULT 0,
        closed boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT executions_execution_id_uq UNIQUE (execution_id),
        CONSTRAINT executions_task_turn_uq UNIQUE (task_id, turn)
      )`);
    await q.query(`
      CREATE TABLE dispatcher.message_dedup (
        tenant text NOT NULL,
        agent_id text NOT NULL,
        message_id text NOT NULL,
        content_hash text NOT NULL,
        task_id text NOT NULL,
        turn integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, agent_id, message_id)
      )`);
    await q.query(`
      CREATE TABLE dispatcher.outbox (
        id bigserial PRIMARY KEY,
        topic text NOT NULL,
        key text NOT NULL,
        headers jsonb NOT NULL,
        value text NOT NULL,
        agent_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE dispatcher.outbox`);
    await q.query(`DROP TABLE dispatcher.message_dedup`);
    await q.query(`DROP TABLE dispatcher.executions`);
    await q.query(`DROP TABLE dispatcher.tasks`);
  }
}
