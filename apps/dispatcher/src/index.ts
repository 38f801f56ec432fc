export * from './dispatcher.app.js';
export * from './config/dispatcher.config.js';
export * from './database/migrations/index.js';
export { REQUEST_TIMEOUT_HEADER } from './a2a/dispatcher-request-handler.js';
export type { CommandProducer, OutboxCommand } from './outbox/command-producer.js';
