export * from './agents.app.js';
export * from './config/agents.config.js';
export * from './database/migrations/index.js';
