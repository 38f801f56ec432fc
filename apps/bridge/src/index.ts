export * from './remote-agents-config.js';
