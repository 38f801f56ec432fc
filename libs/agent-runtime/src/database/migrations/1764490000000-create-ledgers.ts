import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Execution ledger (one row per turn, leased) and effect ledger (one row per tool-call idempotency key). */
export class CreateLedgers1764490000000 implements MigrationInterface {
  name = 'CreateLedgers1764490000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agents.executions (
        execution_id text PRIMARY KEY,
        tenant text NOT NULL,
        agent_id text NOT NULL,
        task_id text NOT NULL,
        context_id text NOT NULL,
        turn integer NOT NULL CHECK (turn >= 0),
        state text NOT NULL CHECK (state IN ('running', 'finished')),
        owner text NOT NULL,
        attempt integer NOT NULL DEFAULT 1,
        lease_until timestamptz NOT NULL,
        input_message jsonb NOT NULL,
        final_state text,
        reply_message jsonb,
        final_events jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
      )`);
    await q.query(`CREATE INDEX executions_task_idx ON agents.executions (tenant, task_id, turn)`);
    await q.query(`
      CREATE TABLE agents.tool_effects (
        idempotency_key text PRIMARY KEY,
        tenant text NOT NULL,
        task_id text NOT NULL,
        execution_id text NOT NULL,
        tool text NOT NULL,
        args_hash text NOT NULL,
        args jsonb NOT NULL,
        side_effect boolean NOT NULL,
        state text NOT NULL CHECK (state IN ('pending', 'ok', 'error', 'unknown', 'absent')),
        result jsonb,
        reason text,
        owner text NOT NULL,
        lease_until timestamptz NOT NULL,
        attempts integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        resolved_at timestamptz
      )`);
    await q.query(`CREATE INDEX tool_effects_unknown_idx ON agents.tool_effects (updated_at) WHERE state = 'unknown'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agents.tool_effects`);
    await q.query(`DROP TABLE agents.executions`);
  }
}
