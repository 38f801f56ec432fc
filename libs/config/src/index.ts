export * from './config-loader.js';
export * from './areas.js';
