export * from './database-bootstrap.js';
export * from './statement-batcher.js';
export * from './transient-errors.js';
