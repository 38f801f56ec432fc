import type { MigrationInterface } from 'typeorm';

/** Postgres schema owned by the dispatcher. */
export const DISPATCHER_SCHEMA = 'dispatcher';

/** Ordered migrations of the dispatcher's schema. */
export const dispatcherMigrations: Array<new () => MigrationInterface> = [];
