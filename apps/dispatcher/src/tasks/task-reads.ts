import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { TaskEventPage, TaskRepository } from './task.repository.js';
import { listQuery, listResponse } from './task-list.js';

/** Tasks as their tenant reads them: GetTask, a stream's starting point and log, ListTasks. */
export class TaskReads {
  constructor(private readonly repo: TaskRepository) {}

  /** A task as its tenant sees it (undefined for unknown ids and other tenants' tasks). */
  async load(taskId: string, tenant: string, agentId: string): Promise<Task | undefined> {
    const found = await this.repo.load(taskId, tenant, agentId);
    return found ? Task.fromJSON(found.task) : undefined;
  }

  /**
   * A task with, per execution, the seq of the last worker event its stored state includes (one
   * consistent read: the projection writes both in one statement), for a stream that must not show
   * an event twice.
   */
  async loadWithProgress(
    taskId: string,
    tenant: string,
    agentId: string,
  ): Promise<{ task: Task; lastSeq: Record<string, number>; eventSeq: number } | undefined> {
    const found = await this.repo.loadWithProgress(taskId, tenant, agentId);
    return found ? { task: Task.fromJSON(found.task), lastSeq: found.lastSeq, eventSeq: found.eventSeq } : undefined;
  }

  /** Up to `limit` logged stream events of a task after number `after` (see TaskRepository.readEvents). */
  readEvents(taskId: string, tenant: string, agentId: string, after: number, limit: number): Promise<TaskEventPage | undefined> {
    return this.repo.readEvents(taskId, tenant, agentId, after, limit);
  }

  /** Newest status first, keyset pagination on (status_timestamp, id). */
  async list(params: ListTasksRequest, tenant: string, agentId: string): Promise<ListTasksResponse> {
    return listResponse(params, await this.repo.list(listQuery(params, tenant, agentId)));
  }
}
