import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Agents, their card versions, and the full-text search document. */
export class CreateAgents1764480000000 implements MigrationInterface {
  name = 'CreateAgents1764480000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE directory.agent (
        id text PRIMARY KEY,
        tenant text NOT NULL,
        visibility text NOT NULL CHECK (visibility IN ('private', 'tenant', 'public')),
        version integer NOT NULL,
        card jsonb NOT NULL,
        channel_key_template text NOT NULL,
        partitions integer NOT NULL CHECK (partitions > 0),
        search_document tsvector NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz,
        last_heartbeat_at timestamptz
      )`);
    await q.query(`CREATE INDEX agent_tenant_idx ON directory.agent (tenant)`);
    await q.query(`CREATE INDEX agent_search_idx ON directory.agent USING gin (search_document)`);
    await q.query(`CREATE INDEX agent_card_idx ON directory.agent USING gin (card jsonb_path_ops)`);
    await q.query(`
      CREATE TABLE directory.agent_version (
        agent_id text NOT NULL REFERENCES directory.agent (id),
        version integer NOT NULL,
        card jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent_id, version)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE directory.agent_version`);
    await q.query(`DROP TABLE directory.agent`);
  }
}
