import type { MigrationInterface } from 'typeorm';
import { CreateLedgers1764490000000 } from './1764490000000-create-ledgers.js';
import { CancellationsAndRetention1765100000000 } from './1765100000000-cancellations-and-retention.js';
import { ExecutionTraceparent1765200000000 } from './1765200000000-execution-traceparent.js';
import { RemoteTasks1765300000000 } from './1765300000000-remote-tasks.js';

/** Postgres schema owned by the agents. */
export const AGENTS_SCHEMA = 'agents';

/** Ordered migrations of the agents's schema. */
export const agentsMigrations: Array<new () => MigrationInterface> = [
  CreateLedgers1764490000000,
  CancellationsAndRetention1765100000000,
  ExecutionTraceparent1765200000000,
  RemoteTasks1765300000000,
];
