/**
 * A2A 1.0 task states as they travel in `task.status` events and sit in the dispatcher's `state`
 * column: the `TASK_STATE_*` names of @a2a-js/sdk's JSON form, and nothing else.
 */
export const TaskStates = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  inputRequired: 'TASK_STATE_INPUT_REQUIRED',
  authRequired: 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
  rejected: 'TASK_STATE_REJECTED',
} as const;

export type TaskState = (typeof TaskStates)[keyof typeof TaskStates];

/** Every task state, in lifecycle order. */
export const TASK_STATES: readonly TaskState[] = Object.values(TaskStates);

/** No further turn is possible. */
export const TERMINAL_TASK_STATES: readonly TaskState[] = [
  TaskStates.completed,
  TaskStates.failed,
  TaskStates.canceled,
  TaskStates.rejected,
];

/** The turn ended and the task waits for its caller. */
export const INTERRUPTED_TASK_STATES: readonly TaskState[] = [TaskStates.inputRequired, TaskStates.authRequired];

/** States a task can still change from. */
export const OPEN_TASK_STATES: readonly TaskState[] = [TaskStates.submitted, TaskStates.working, ...INTERRUPTED_TASK_STATES];

const KNOWN = new Set<string>(TASK_STATES);

/** True for exactly the wire spelling of a task state. */
export function isTaskState(raw: unknown): raw is TaskState {
  return typeof raw === 'string' && KNOWN.has(raw);
}

/** The one parser at the boundary (an event's body, a stored row): the wire spelling or undefined. */
export function parseTaskState(raw: unknown): TaskState | undefined {
  return isTaskState(raw) ? raw : undefined;
}
