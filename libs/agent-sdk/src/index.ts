export * from './agent-task.js';
export * from './agent-definition.js';
