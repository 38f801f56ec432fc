export * from './run-main.js';
export * from './health.js';
export * from './http-service.js';
export * from './periodic-task.js';
