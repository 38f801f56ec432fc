export * from './sample-agents/index.js';
