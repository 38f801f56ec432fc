import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agents (current state), their card versions, and the full-text search document.
 * `revision` counts every change (register, update, retire, visibility); `published_revision` is
 * the last one written to the compacted cards topic — the gap is the outbox.
 */
export class CreateAgents1764480000000 implements MigrationInterface {
  name = 'CreateAgents1764480000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE directory.agent (
        id text PRIMARY KEY,
        tenant text NOT NULL,
        visibility text NOT NULL CHECK (visibility IN ('private', 'tenant', 'public')),
        version integer NOT NULL CHECK (version > 0),
        card jsonb NOT NULL,
        channel_key_template text NOT NULL,
        partitions integer NOT NULL CHECK (partitions > 0),
        skill_ids text[] NOT NULL,
        skill_tags text[] NOT NULL,
        input_modes text[] NOT NULL,
        output_modes text[] NOT NULL,
        search_document tsvector NOT NULL,
        registered_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz,
        last_heartbeat_at timestamptz,
        heartbeat_ttl_ms integer,
        healthy_until timestamptz,
        revision integer NOT NULL DEFAULT 1,
        published_revision integer NOT NULL DEFAULT 0
      )`);
    await q.query(`CREATE INDEX agent_listing_idx ON directory.agent (tenant, id) WHERE retired_at IS NULL`);
    await q.query(`CREATE INDEX agent_public_idx ON directory.agent (id) WHERE retired_at IS NULL AND visibility = 'public'`);
    // fastupdate off: registrations are rare, searches are not; a pending list would make every
    // search scan it until the next vacuum.
    await q.query(`CREATE INDEX agent_search_idx ON directory.agent USING gin (search_document) WITH (fastupdate = off)`);
    await q.query(`CREATE INDEX agent_skill_ids_idx ON directory.agent USING gin (skill_ids) WITH (fastupdate = off)`);
    await q.query(`CREATE INDEX agent_skill_tags_idx ON directory.agent USING gin (skill_tags) WITH (fastupdate = off)`);
    await q.query(`CREATE INDEX agent_unpublished_idx ON directory.agent (id) WHERE published_revision < revision`);
    await q.query(`
      CREATE TABLE directory.agent_version (
        agent_id text NOT NULL REFERENCES directory.agent (id),
        version integer NOT NULL,
        card jsonb NOT NULL,
        channel_key_template text NOT NULL,
        partitions integer NOT NULL,
        visibility text NOT NULL,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent_id, version)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE directory.agent_version`);
    await q.query(`DROP TABLE directory.agent`);
  }
}
