export * from './catalog-state.js';
export * from './agent-catalog.js';
