export * from './agents.app.js';
export * from './run-agents.js';
export * from './config/agents.config.js';
export * from './database/migrations/index.js';
export * from './runtime/execution-ledger.js';
export * from './runtime/a2a-wire.js';
export * from './retention/ledger-retention.js';
