import { TaskState } from '@a2a-js/sdk';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { Json, TaskRow } from './task.repository.js';
import { isInterrupted, isTerminal, parseState, stateName } from './task-state.js';

/*
 * How a turn changes a task's stored JSON, and which follow-up messages a task takes: the pure
 * part of the task store's writes (TaskAcceptance, TaskEndings, TaskTree).
 */

/** Why `row` takes no follow-up message (with `contextId`, when the message names one); undefined when it takes it. */
export function followUpRefusal(row: TaskRow, contextId?: string): Error | undefined {
  const state = parseState(row.state)!;
  if (isTerminal(state))
    return new UnsupportedOperationError(`Task ${row.id} is in a terminal state (${row.state}) and cannot be modified.`);
  if (contextId && contextId !== row.context_id) {
    return new RequestMalformedError(
      `contextId mismatch: message contextId '${contextId}' does not match task '${row.id}' contextId '${row.context_id}'`,
    );
  }
  if (!isInterrupted(state)) {
    return new UnsupportedOperationError(
      `Task ${row.id} is ${row.state}; a follow-up message is accepted only when the task asks for input.`,
    );
  }
  return undefined;
}

/** A later turn's deadline: the earlier of the task's budget and the one asked for; one budget per task. */
export function turnDeadline(budget: Date | null | undefined, requestedUnixMs: number | undefined): number | undefined {
  const budgetMs = budget ? new Date(budget).getTime() : undefined;
  return budgetMs !== undefined && requestedUnixMs !== undefined ? Math.min(budgetMs, requestedUnixMs) : (budgetMs ?? requestedUnixMs);
}

/** `task` SUBMITTED again at `now`, with the message that starts the new turn appended to its history. */
export function resubmitted(task: Json, message: Json, now: Date): Json {
  const status = { state: stateName(TaskState.TASK_STATE_SUBMITTED), timestamp: now.toISOString() };
  return { ...task, status, history: [...((task.history as Json[]) ?? []), message] };
}

/**
 * `task` going on at `now` with the message that starts its next turn appended to its history: a
 * delegating task resuming with its children's outcomes stays WORKING (a caller saw it WORKING;
 * SUBMITTED again would be a step back).
 */
export function resumed(task: Json, message: Json, now: Date): Json {
  const status = { state: stateName(TaskState.TASK_STATE_WORKING), timestamp: now.toISOString() };
  return { ...task, status, history: [...((task.history as Json[]) ?? []), message] };
}

/** `task` ended with `state` at `now`; the status message, when given, is also appended to the history. */
export function ended(task: Json, state: TaskState, now: Date, message?: Json): Json {
  const status = { state: stateName(state), timestamp: now.toISOString(), ...(message ? { message } : {}) };
  return { ...task, status, ...(message ? { history: [...((task.history as Json[]) ?? []), message] } : {}) };
}
