export * from './run-main.js';
export * from './health.js';
export * from './http-service.js';
