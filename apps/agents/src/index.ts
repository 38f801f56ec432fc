export * from './agents.app.js';
export * from './config/agents.config.js';
export * from './database/migrations/index.js';
export * from './billing-tools/billing-tools.app.js';
export * from './billing-tools/billing-tools.config.js';
export * from './billing-tools/billing-hooks.js';
export * from './billing-tools/migrations/index.js';
