import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { principalOf } from '../a2a/principal-user.js';
import type { TaskReads } from './task-reads.js';

/**
 * The SDK's TaskStore over the dispatcher's Postgres tables, scoped to one agent and to the
 * caller's tenant (another tenant's task is simply not found). Reads go straight to Postgres;
 * writes are refused here because tasks change only through the task store's writers
 * (TaskAcceptance, TaskEndings, the tree, the projection), which keep the outbox and the state guards.
 */
export class PostgresTaskStore implements TaskStore {
  constructor(
    private readonly tasks: Pick<TaskReads, 'load' | 'list'>,
    private readonly agentId: string,
  ) {}

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    return this.tasks.load(taskId, principalOf(context).tenant, this.agentId);
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return this.tasks.list(params, principalOf(context).tenant, this.agentId);
  }

  async save(task: Task, _context: ServerCallContext): Promise<void> {
    throw new Error(`PostgresTaskStore.save(${task.id}): tasks are written by the task store's writers only`);
  }
}
