import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Delegation (docs/agents.md, "Delegation"): a task's place in its tree (parent and root), the
 * open waits of delegating turns (one row per parent turn: the children it asked for, and the
 * subject, actor chain and scopes its next turn acts for), and the
 * retry budget of each task tree with what every execution of the tree charged to it (one row per
 * execution: a redelivered event charges nothing twice).
 */
export class Delegation1765600000000 implements MigrationInterface {
  name = 'Delegation1765600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.tasks ADD COLUMN parent_task_id text, ADD COLUMN root_task_id text`);
    await q.query(`CREATE INDEX tasks_parent_idx ON dispatcher.tasks (parent_task_id) WHERE parent_task_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE dispatcher.delegations (
        parent_task_id text NOT NULL,
        turn integer NOT NULL,
        tenant text NOT NULL,
        agent_id text NOT NULL,
        root_task_id text NOT NULL,
        join_mode text NOT NULL CHECK (join_mode IN ('all', 'first')),
        deadline_at timestamptz NOT NULL,
        children jsonb NOT NULL,
        authority jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        resumed_at timestamptz,
        reason text,
        PRIMARY KEY (parent_task_id, turn)
      )`);
    await q.query(`CREATE INDEX delegations_open_idx ON dispatcher.delegations (deadline_at) WHERE resumed_at IS NULL`);
    await q.query(`
      CREATE TABLE dispatcher.task_trees (
        root_task_id text PRIMARY KEY,
        tenant text NOT NULL,
        budget integer NOT NULL,
        exhausted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE dispatcher.tree_usage (
        execution_id text PRIMARY KEY,
        root_task_id text NOT NULL,
        redeliveries integer NOT NULL,
        retries integer NOT NULL
      )`);
    await q.query(`CREATE INDEX tree_usage_root_idx ON dispatcher.tree_usage (root_task_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE dispatcher.tree_usage`);
    await q.query(`DROP TABLE dispatcher.task_trees`);
    await q.query(`DROP TABLE dispatcher.delegations`);
    await q.query(`DROP INDEX dispatcher.tasks_parent_idx`);
    await q.query(`ALTER TABLE dispatcher.tasks DROP COLUMN root_task_id, DROP COLUMN parent_task_id`);
  }
}
