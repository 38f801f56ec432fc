export * from './directory.app.js';
export * from './config/directory.config.js';
export * from './database/migrations/index.js';
export { InMemoryCardStream, type CardStream } from './card-stream/card-stream.port.js';
