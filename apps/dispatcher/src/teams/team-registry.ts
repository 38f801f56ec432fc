import type { DataSource } from 'typeorm';
import type { TeamBinding, TeamBindingInput, TeamEventKey } from './team-binding.js';

/** A binding refused because it would take another live team's agent or key id (409). */
export class TeamConflict extends Error {
  override readonly name = 'TeamConflict';
}

interface TeamRow {
  name: string;
  tenant: string;
  agents: string[];
  event_keys: { keys: TeamEventKey[] };
  tool_audiences: string[];
  kafka_principal: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

const bindingOf = (r: TeamRow): TeamBinding => ({
  name: r.name,
  tenant: r.tenant,
  agents: r.agents,
  eventKeys: r.event_keys,
  toolAudiences: r.tool_audiences,
  kafkaPrincipal: r.kafka_principal,
  createdAt: r.created_at.toISOString(),
  revokedAt: r.revoked_at?.toISOString() ?? null,
});

/**
 * The team bindings in Postgres (`dispatcher.teams`, shared by every replica). Writes take one
 * transaction-scoped advisory lock, so two bindings claiming the same agent or key id are decided
 * one after the other.
 */
export class TeamRegistry {
  constructor(private readonly ds: DataSource) {}

  /**
   * Creates or replaces the live binding `name` (a revoked name is bound afresh). Throws
   * {@link TeamConflict} when another live team owns one of its agents or key ids.
   */
  async put(name: string, input: TeamBindingInput): Promise<TeamBinding> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('dispatcher.teams'))`);
      const owned: Array<{ agent_id: string; team: string }> = await m.query(
        `SELECT agent_id, team FROM dispatcher.team_agents WHERE agent_id = ANY($1) AND team <> $2`,
        [input.agents, name],
      );
      if (owned.length > 0)
        throw new TeamConflict(
          `${owned.map((o) => `agent ${o.agent_id} belongs to team ${o.team}`).join('; ')}: revoke that binding first`,
        );
      const kids = input.eventKeys.keys.map((k) => k.kid);
      const taken: Array<{ name: string; kid: string }> = await m.query(
        `SELECT t.name, k->>'kid' AS kid FROM dispatcher.teams t, jsonb_array_elements(t.event_keys->'keys') k
          WHERE t.revoked_at IS NULL AND t.name <> $1 AND k->>'kid' = ANY($2)`,
        [name, kids],
      );
      if (taken.length > 0)
        throw new TeamConflict(`${taken.map((t) => `key id ${t.kid} belongs to team ${t.name}`).join('; ')}: give each key its own id`);
      const [row]: TeamRow[] = await m.query(
        `INSERT INTO dispatcher.teams (name, tenant, agents, event_keys, tool_audiences, kafka_principal)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (name) DO UPDATE SET tenant = $2, agents = $3, event_keys = $4, tool_audiences = $5, kafka_principal = $6,
           created_at = CASE WHEN teams.revoked_at IS NULL THEN teams.created_at ELSE now() END, revoked_at = NULL
         RETURNING *`,
        [name, input.tenant, input.agents, JSON.stringify(input.eventKeys), input.toolAudiences, input.kafkaPrincipal ?? null],
      );
      await m.query(`DELETE FROM dispatcher.team_agents WHERE team = $1`, [name]);
      await m.query(`INSERT INTO dispatcher.team_agents (agent_id, team) SELECT unnest($1::text[]), $2`, [input.agents, name]);
      return bindingOf(row!);
    });
  }

  /** Every binding, live and revoked, by name. */
  async list(): Promise<TeamBinding[]> {
    const rows: TeamRow[] = await this.ds.query(`SELECT * FROM dispatcher.teams ORDER BY name`);
    return rows.map(bindingOf);
  }

  /** Revokes `name` (its keys are no longer believed, its agents are free); false when there is no such team. */
  async revoke(name: string): Promise<boolean> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('dispatcher.teams'))`);
      const found: unknown[] = await m.query(`SELECT 1 FROM dispatcher.teams WHERE name = $1`, [name]);
      if (found.length === 0) return false;
      await m.query(`UPDATE dispatcher.teams SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL`, [name]);
      await m.query(`DELETE FROM dispatcher.team_agents WHERE team = $1`, [name]);
      return true;
    });
  }
}
