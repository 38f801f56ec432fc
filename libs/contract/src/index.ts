export * from './headers.js';
export * from './errors.js';
export * from './canonical-json.js';
export * from './ids.js';
export * from './topics.js';
export * from './channel-key.js';
export * from './envelope.js';
export * from './agent-record.js';
