export * from './directory.app.js';
export * from './config/directory.config.js';
export * from './database/migrations/index.js';
export { InMemoryCardStream, type CardStream } from './card-stream/card-stream.port.js';
export { registrySchemas, agentCardSchema } from './registry/registry.schemas.js';
export { searchQuerySchema, searchText, MAX_SEARCH_TERMS } from './search/search.service.js';
export { MAX_BODY_DEPTH } from './common/input-text.js';
