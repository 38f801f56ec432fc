export * from './tracing.js';
export * from './metrics.js';
export * from './metrics.module.js';
export * from './logging.js';
export * from './messaging.js';
