export * from './dispatcher.app.js';
export * from './config/dispatcher.config.js';
export * from './database/migrations/index.js';
