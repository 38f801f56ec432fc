import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Team bindings (docs/dispatcher.md, "Team bindings"): which agents a team's worker runs, the
 * public keys its events are signed with, the tool audiences its agents may get. An agent belongs
 * to at most one live team: `team_agents` holds the live teams' agents only (a revoke deletes its
 * rows), so its primary key refuses a second owner atomically.
 */
export class Teams1765900000000 implements MigrationInterface {
  name = 'Teams1765900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE dispatcher.teams (
        name text PRIMARY KEY,
        tenant text NOT NULL,
        agents text[] NOT NULL,
        event_keys jsonb NOT NULL,
        tool_audiences text[] NOT NULL DEFAULT '{}',
        kafka_principal text,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE dispatcher.team_agents (
        agent_id text PRIMARY KEY,
        team text NOT NULL REFERENCES dispatcher.teams (name) ON DELETE CASCADE
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE dispatcher.team_agents`);
    await q.query(`DROP TABLE dispatcher.teams`);
  }
}
