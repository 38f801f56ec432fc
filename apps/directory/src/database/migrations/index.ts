import type { MigrationInterface } from 'typeorm';
import { CreateAgents1764480000000 } from './1764480000000-create-agents.js';

/** Postgres schema owned by the directory. */
export const DIRECTORY_SCHEMA = 'directory';

/** Ordered migrations of the directory's schema. */
export const directoryMigrations: Array<new () => MigrationInterface> = [CreateAgents1764480000000];
