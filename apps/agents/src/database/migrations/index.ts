import type { MigrationInterface } from 'typeorm';

/** Postgres schema owned by the agents. */
export const AGENTS_SCHEMA = 'agents';

/** Ordered migrations of the agents's schema. */
export const agentsMigrations: Array<new () => MigrationInterface> = [];
