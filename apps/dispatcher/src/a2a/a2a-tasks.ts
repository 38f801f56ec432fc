import type { TaskAcceptance } from '../tasks/task-acceptance.js';
import type { TaskEndings } from '../tasks/task-endings.js';
import type { TaskReads } from '../tasks/task-reads.js';

/** What the A2A adapter asks of the task store: SendMessage, CancelTask and the reads, by role underneath. */
export type A2aTasks = Pick<TaskAcceptance, 'accept'> &
  Pick<TaskEndings, 'cancel'> &
  Pick<TaskReads, 'load' | 'loadWithProgress' | 'readEvents' | 'list'>;

/** The adapter's view over the three role objects of the task store. */
export function a2aTasksOf(acceptance: TaskAcceptance, endings: TaskEndings, reads: TaskReads): A2aTasks {
  return {
    accept: (input) => acceptance.accept(input),
    cancel: (taskId, principal, agent, reason) => endings.cancel(taskId, principal, agent, reason),
    load: (taskId, tenant, agentId) => reads.load(taskId, tenant, agentId),
    loadWithProgress: (taskId, tenant, agentId) => reads.loadWithProgress(taskId, tenant, agentId),
    readEvents: (taskId, tenant, agentId, after, limit) => reads.readEvents(taskId, tenant, agentId, after, limit),
    list: (params, tenant, agentId) => reads.list(params, tenant, agentId),
  };
}
