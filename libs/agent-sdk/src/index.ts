export * from './agent-task.js';
export * from './agent-definition.js';
export type { JsonObject } from '@mesh/contract';
