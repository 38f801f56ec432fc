import { TaskState, taskStateFromJSON, taskStateToJSON } from '@a2a-js/sdk';
import {
  INTERRUPTED_TASK_STATES,
  MeshError,
  OPEN_TASK_STATES,
  parseTaskState,
  TERMINAL_TASK_STATES,
  type TaskState as WireTaskState,
} from '@mesh/contract';

/*
 * The dispatcher works with @a2a-js/sdk's TaskState enum (its Task objects carry it); events and
 * the `state` column carry `@mesh/contract`'s TaskState names. These functions translate.
 */

const TERMINAL = new Set<TaskState>(TERMINAL_TASK_STATES.map((s) => taskStateFromJSON(s)));
const INTERRUPTED = new Set<TaskState>(INTERRUPTED_TASK_STATES.map((s) => taskStateFromJSON(s)));

/** No further turn is possible. */
export const isTerminal = (s: TaskState): boolean => TERMINAL.has(s);
/** The turn ended and the task waits for the caller. */
export const isInterrupted = (s: TaskState): boolean => INTERRUPTED.has(s);
/** A blocking SendMessage returns at these states. */
export const isSettled = (s: TaskState): boolean => isTerminal(s) || isInterrupted(s);

/** Stored names of the terminal states, and of the states a task can still change from. */
export const TERMINAL_STATE_NAMES: readonly WireTaskState[] = TERMINAL_TASK_STATES;
export const OPEN_STATE_NAMES: readonly WireTaskState[] = OPEN_TASK_STATES;

/**
 * Order of states within one turn: a later event may only keep or raise the rank, so a late
 * WORKING never overwrites COMPLETED.
 */
export function stateRank(s: TaskState): number {
  if (s === TaskState.TASK_STATE_SUBMITTED) return 0;
  if (s === TaskState.TASK_STATE_WORKING) return 1;
  return 2;
}

/** A state as events and the `state` column carry it (`TASK_STATE_WORKING` …) → TaskState; anything else: undefined. */
export function parseState(raw: string): TaskState | undefined {
  const s = parseTaskState(raw);
  return s === undefined ? undefined : taskStateFromJSON(s);
}

/** A settled state as the `outcome` label of `mesh_tasks_total` (`completed`, `input_required` …). */
export const outcomeLabel = (s: TaskState): string => taskStateToJSON(s).replace('TASK_STATE_', '').toLowerCase();

/** TaskState → its A2A 1.0 JSON name, as stored in the `state` column and sent in events. */
export function stateName(s: TaskState): WireTaskState {
  const name = parseTaskState(taskStateToJSON(s));
  if (name === undefined) throw new MeshError('CONTRACT_VIOLATION', `no task has the state ${taskStateToJSON(s)}`);
  return name;
}
