import { Task, TaskState } from '@a2a-js/sdk';
import type { DataSource } from 'typeorm';
import { Envelopes, newId, type TaskEvent } from '@mesh/contract';
import { preparedQuery, type Json, type TaskRow } from './task-db.js';
import { isInterrupted, isTerminal, parseState, stateName, stateRank } from './task-state.js';

/** Outcome of projecting one event. */
export type ProjectionOutcome =
  | { applied: true; task: Task; event: TaskEvent }
  | {
      applied: false;
      reason:
        'unknown-task' | 'identity-mismatch' | 'unknown-execution' | 'stale-turn' | 'turn-closed' | 'duplicate' | 'regression' | 'invalid';
    };

/**
 * Applies worker events to tasks: the event-stream side of the single writer (see TaskService).
 * The events of one task reach it one at a time (the keyed consumer, and one consumer per
 * partition across replicas); API writes to the same task are detected by the version check.
 */
type ProjectedRow = TaskRow & { e_turn: number | null; last_seq: number; artifact_count: number; closed: boolean };

export class TaskProjection {
  /**
   * Rows this projector wrote last, by task id: the next event of the task (usually within
   * milliseconds) skips the read. Safe because every write checks the version it was decided on;
   * a stale entry makes the write miss, and the event is decided again on a fresh read.
   */
  private readonly recent = new Map<string, ProjectedRow & { executionId: string }>();

  constructor(
    private readonly ds: DataSource,
    private readonly cacheSize = 10_000,
  ) {}

  private remember(executionId: string, row: ProjectedRow): void {
    this.recent.delete(row.id);
    if (row.closed) return; // the turn is over: nothing more is expected for it
    this.recent.set(row.id, { ...row, executionId });
    if (this.recent.size > this.cacheSize) this.recent.delete(this.recent.keys().next().value!);
  }

  /**
   * Projects one worker event into the task: ignored when the task or execution is unknown, the
   * identity does not match, the turn is over, or `seq` is not above the last applied one; states
   * never go back; COMPLETED without any artifact of the turn becomes FAILED (no result is no
   * success).
   */
  async applyEvent(env: TaskEvent): Promise<ProjectionOutcome> {
    // Optimistic: read, decide, then write only if the task's version is still the one read. A
    // concurrent writer (CancelTask, a follow-up turn) makes the write miss and the event is
    // decided again on the new state. One or two round trips per applied event (see `recent`).
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.tryApply(env);
      if (outcome !== 'conflict') return outcome;
      this.recent.delete(env.identity.taskId);
      if (attempt >= 10) throw new Error(`task ${env.identity.taskId} kept changing while applying an event`);
    }
  }

  private async tryApply(env: TaskEvent): Promise<ProjectionOutcome | 'conflict'> {
    const id = env.identity;
    const q = this.ds;
    {
      const cached = this.recent.get(id.taskId);
      let row: ProjectedRow | undefined;
      if (cached && cached.executionId === id.executionId && cached.tenant === id.tenant) row = cached;
      else {
        // Task row and the event's execution in one round trip.
        const rows = await preparedQuery<ProjectedRow>(
          q,
          'dispatcher-projection-read',
          `SELECT t.*, e.turn AS e_turn, e.last_seq, e.artifact_count, e.closed
           FROM dispatcher.tasks t LEFT JOIN dispatcher.executions e ON e.execution_id = $2 AND e.task_id = t.id
           WHERE t.id = $1 AND t.tenant = $3`,
          [id.taskId, id.executionId, id.tenant],
        );
        row = rows[0];
      }
      if (!row) return { applied: false, reason: 'unknown-task' };
      if (row.agent_id !== id.agentId || row.context_id !== id.contextId) return { applied: false, reason: 'identity-mismatch' };
      if (row.e_turn === null) return { applied: false, reason: 'unknown-execution' };
      const exec = { turn: row.e_turn, last_seq: row.last_seq, artifact_count: row.artifact_count, closed: row.closed };
      if (exec.turn !== row.turn) return { applied: false, reason: 'stale-turn' };
      if (exec.closed) return { applied: false, reason: 'turn-closed' };
      if (env.body.seq <= exec.last_seq) return { applied: false, reason: 'duplicate' };
      const task: Json = { ...row.task };
      let state = parseState(row.state)!;
      let closed = false;
      let artifacts = exec.artifact_count;
      let event: TaskEvent = env;
      if (env.kind === 'task.status') {
        const next = parseState(env.body.state);
        if (next === undefined || next === TaskState.TASK_STATE_SUBMITTED) return { applied: false, reason: 'invalid' };
        if (stateRank(next) < stateRank(state)) return { applied: false, reason: 'regression' };
        let statusMessage: Json | undefined = env.body.message
          ? { ...env.body.message, taskId: row.id, contextId: row.context_id }
          : undefined;
        state = next;
        if (state === TaskState.TASK_STATE_COMPLETED && artifacts === 0) {
          state = TaskState.TASK_STATE_FAILED;
          statusMessage = {
            messageId: newId(),
            role: 'ROLE_AGENT',
            taskId: row.id,
            contextId: row.context_id,
            parts: [{ text: 'The agent reported completion without producing an artifact; the task is not complete.' }],
          };
          event = Envelopes.status(id, { ...env.body, state: stateName(state), message: statusMessage });
        }
        task.status = {
          state: stateName(state),
          timestamp: new Date().toISOString(),
          ...(statusMessage ? { message: statusMessage } : {}),
        };
        if (statusMessage) task.history = [...((task.history as Json[]) ?? []), statusMessage];
        closed = isTerminal(state) || isInterrupted(state);
      } else {
        const incoming = env.body.artifact as Json & { artifactId?: string; parts?: unknown[] };
        const list = [...((task.artifacts as Array<Json & { artifactId?: string; parts?: unknown[] }>) ?? [])];
        const at = list.findIndex((a) => a.artifactId && a.artifactId === incoming.artifactId);
        if (at >= 0 && env.body.append) list[at] = { ...list[at], parts: [...(list[at].parts ?? []), ...(incoming.parts ?? [])] };
        else if (at >= 0) list[at] = incoming;
        else list.push(incoming);
        task.artifacts = list;
        artifacts += 1;
      }
      // Both rows in one statement, only if nobody wrote the task since it was read; the status
      // timestamp moves only with the status.
      const written = await preparedQuery<unknown>(
        q,
        'dispatcher-projection-write',
        `WITH t AS (
           UPDATE dispatcher.tasks SET state = $2, task = $3, version = version + 1, updated_at = now(),
             status_timestamp = CASE WHEN $4 THEN now() ELSE status_timestamp END
           WHERE id = $1 AND version = $9 RETURNING id)
         UPDATE dispatcher.executions SET last_seq = $6, artifact_count = $7, closed = $8
         WHERE execution_id = $5 AND EXISTS (SELECT 1 FROM t) RETURNING 1`,
        [row.id, stateName(state), task, env.kind === 'task.status', id.executionId, env.body.seq, artifacts, closed, row.version],
      );
      if (written.length === 0) return 'conflict';
      this.remember(id.executionId, {
        ...row,
        state: stateName(state),
        task,
        version: row.version + 1,
        last_seq: env.body.seq,
        artifact_count: artifacts,
        closed,
      });
      return { applied: true, task: Task.fromJSON(task), event };
    }
  }
}
