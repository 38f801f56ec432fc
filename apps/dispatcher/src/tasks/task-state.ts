import { TaskState, taskStateFromJSON, taskStateToJSON } from '@a2a-js/sdk';

const TERMINAL = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);
const INTERRUPTED = new Set<TaskState>([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);

/** No further turn is possible. */
export const isTerminal = (s: TaskState): boolean => TERMINAL.has(s);
/** The turn ended and the task waits for the caller. */
export const isInterrupted = (s: TaskState): boolean => INTERRUPTED.has(s);
/** A blocking SendMessage returns at these states. */
export const isSettled = (s: TaskState): boolean => isTerminal(s) || isInterrupted(s);

/** Stored names of the terminal states, and of the states a task can still change from. */
export const TERMINAL_STATE_NAMES: readonly string[] = [...TERMINAL].map((s) => taskStateToJSON(s));
export const OPEN_STATE_NAMES: readonly string[] = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, ...INTERRUPTED].map((s) =>
  taskStateToJSON(s),
);

/**
 * Order of states within one turn: a later event may only keep or raise the rank, so a late
 * WORKING never overwrites COMPLETED.
 */
export function stateRank(s: TaskState): number {
  if (s === TaskState.TASK_STATE_SUBMITTED) return 0;
  if (s === TaskState.TASK_STATE_WORKING) return 1;
  return 2;
}

/** `TASK_STATE_WORKING`, `working`, `input-required`, `INPUT_REQUIRED` or the enum number → TaskState. */
export function parseState(raw: string | number): TaskState | undefined {
  let s: TaskState;
  if (typeof raw === 'number') s = taskStateFromJSON(raw);
  else {
    const upper = raw.trim().toUpperCase().replace(/-/g, '_');
    s = taskStateFromJSON(upper.startsWith('TASK_STATE_') ? upper : `TASK_STATE_${upper}`);
  }
  return s === TaskState.UNRECOGNIZED || s === TaskState.TASK_STATE_UNSPECIFIED ? undefined : s;
}

/** A settled state as the `outcome` label of `mesh_tasks_total` (`completed`, `input_required` …). */
export const outcomeLabel = (s: TaskState): string => taskStateToJSON(s).replace('TASK_STATE_', '').toLowerCase();

/** TaskState → its A2A 1.0 JSON name, as stored in the `state` column. */
export const stateName = (s: TaskState): string => taskStateToJSON(s);
