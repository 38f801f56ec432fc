import { Task, TaskState, type TaskStatus } from '@a2a-js/sdk';
import type { DataSource } from 'typeorm';
import { Envelopes, newId, type TaskEvent } from '@mesh/contract';
import { StatementBatcher } from '@mesh/database';
import { preparedQuery, type Json, type TaskRow } from './task-db.js';
import { isInterrupted, isTerminal, parseState, stateName, stateRank } from './task-state.js';

/** Outcome of projecting one event. */
export type ProjectionOutcome =
  /** `deliveries`: push deliveries recorded with the change (one per push config of the task). */
  | { applied: true; task: Task; event: TaskEvent; deliveries: number }
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
/** A push notification of an event: its stable id (receivers dedup on it) and body. */
export type PushNotification = { eventId: string; body: unknown };
type ProjectionKey = { task_id: string; execution_id: string; tenant: string };
type ProjectionWrite = {
  id: string;
  state: string;
  task: Json;
  status_changed: boolean;
  execution_id: string;
  seq: number;
  artifact_count: number;
  closed: boolean;
  /** The task version the write was decided on. */
  version: number;
  tenant: string;
  /** Push deliveries recorded with the change: this event id and body, for each config of the task. */
  event_id: string | null;
  push_body: unknown;
};

/** Task rows with the events' executions, for a batch of events (undefined: no such task for that tenant). */
async function readProjected(ds: DataSource, keys: ProjectionKey[]): Promise<Array<ProjectedRow | undefined>> {
  const rows = await preparedQuery<ProjectedRow & { ord: number }>(
    ds,
    'dispatcher-projection-read',
    `SELECT v.ord, t.*, e.turn AS e_turn, e.last_seq, e.artifact_count, e.closed
     FROM jsonb_to_recordset($1::jsonb) AS v(task_id text, execution_id text, tenant text, ord int)
     JOIN dispatcher.tasks t ON t.id = v.task_id AND t.tenant = v.tenant
     LEFT JOIN dispatcher.executions e ON e.execution_id = v.execution_id AND e.task_id = t.id`,
    [JSON.stringify(keys.map((k, ord) => ({ ...k, ord })))],
  );
  const out: Array<ProjectedRow | undefined> = keys.map(() => undefined);
  for (const { ord, ...row } of rows) out[ord] = row;
  return out;
}

/**
 * Applies a batch of decided writes: each task row only if its version is still the one the
 * write was decided on, its execution and its push deliveries with it (so an applied event
 * always has its deliveries). Per write: undefined when a concurrent writer won (decide again),
 * else how many deliveries were recorded.
 */
async function writeProjected(ds: DataSource, writes: ProjectionWrite[]): Promise<Array<number | undefined>> {
  // Two writes of one task in one statement could both pass the version check.
  if (new Set(writes.map((w) => w.id)).size !== writes.length) throw new Error('one task twice in a projection batch');
  const done = await preparedQuery<{ id: string; deliveries: number }>(
    ds,
    'dispatcher-projection-write',
    `WITH v AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(
         id text, state text, task jsonb, status_changed boolean, execution_id text, seq int, artifact_count int, closed boolean,
         version int, tenant text, event_id text, push_body jsonb)),
     t AS (
       UPDATE dispatcher.tasks x SET state = v.state, task = v.task, version = x.version + 1, updated_at = now(),
         status_timestamp = CASE WHEN v.status_changed THEN now() ELSE x.status_timestamp END
       FROM v WHERE x.id = v.id AND x.version = v.version RETURNING x.id),
     e AS (
       UPDATE dispatcher.executions e SET last_seq = v.seq, artifact_count = v.artifact_count, closed = v.closed
       FROM v JOIN t ON t.id = v.id WHERE e.execution_id = v.execution_id RETURNING v.id),
     p AS (
       INSERT INTO dispatcher.push_deliveries (event_id, tenant, task_id, config_id, body)
       SELECT v.event_id, c.tenant, c.task_id, c.id, v.push_body
       FROM v JOIN e ON e.id = v.id JOIN dispatcher.push_configs c ON c.tenant = v.tenant AND c.task_id = v.id
       WHERE v.push_body IS NOT NULL
       ON CONFLICT DO NOTHING RETURNING task_id)
     SELECT e.id, (SELECT count(*)::int FROM p WHERE p.task_id = e.id) AS deliveries FROM e`,
    [JSON.stringify(writes)],
  );
  const written = new Map(done.map((d) => [d.id, d.deliveries]));
  return writes.map((w) => written.get(w.id));
}

export class TaskProjection {
  /**
   * Rows this projector wrote last, by task id: the next event of the task (usually within
   * milliseconds) skips the read. Safe because every write checks the version it was decided on;
   * a stale entry makes the write miss, and the event is decided again on a fresh read.
   */
  private readonly recent = new Map<string, ProjectedRow & { executionId: string }>();

  private readonly reads: StatementBatcher<ProjectionKey, ProjectedRow | undefined>;
  private readonly writes: StatementBatcher<ProjectionWrite, number | undefined>;

  /**
   * `notificationOf` gives the push notification of an event as projected (undefined: none); its
   * deliveries are recorded in the same statement as the change.
   */
  constructor(
    ds: DataSource,
    private readonly notificationOf: (event: TaskEvent, status?: TaskStatus) => PushNotification | undefined = () => undefined,
    private readonly cacheSize = 10_000,
  ) {
    const opts = { maxBatch: 256, maxInFlight: 4 };
    this.reads = new StatementBatcher((keys) => readProjected(ds, keys), opts);
    this.writes = new StatementBatcher((writes) => writeProjected(ds, writes), opts);
  }

  private remember(executionId: string, row: ProjectedRow): void {
    this.recent.delete(row.id);
    if (row.closed) return; // the turn is over: nothing more is expected for it
    this.recent.set(row.id, { ...row, executionId });
    if (this.recent.size > this.cacheSize) this.recent.delete(this.recent.keys().next().value!);
  }

  /**
   * A task this replica has just created: its first event (usually projected here too) skips the
   * read. Safe for the same reason as `recent`: the write checks the version.
   */
  primeNew(row: TaskRow, executionId: string): void {
    this.remember(executionId, { ...row, e_turn: row.turn, last_seq: -1, artifact_count: 0, closed: false });
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
    {
      const cached = this.recent.get(id.taskId);
      let row: ProjectedRow | undefined;
      if (cached && cached.executionId === id.executionId && cached.tenant === id.tenant) row = cached;
      else {
        // Task row and the event's execution in one round trip (shared with concurrent events).
        row = await this.reads.submit({ task_id: id.taskId, execution_id: id.executionId, tenant: id.tenant });
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
      const projected = Task.fromJSON(task);
      const notification = this.notificationOf(event, env.kind === 'task.status' ? projected.status : undefined);
      // One statement (shared with concurrent events) for task, execution and push deliveries,
      // only if nobody wrote the task since it was read; the status timestamp moves only with
      // the status.
      const deliveries = await this.writes.submit({
        id: row.id,
        state: stateName(state),
        task,
        status_changed: env.kind === 'task.status',
        execution_id: id.executionId,
        seq: env.body.seq,
        artifact_count: artifacts,
        closed,
        version: row.version,
        tenant: id.tenant,
        event_id: notification?.eventId ?? null,
        push_body: notification?.body ?? null,
      });
      if (deliveries === undefined) return 'conflict';
      this.remember(id.executionId, {
        ...row,
        state: stateName(state),
        task,
        version: row.version + 1,
        last_seq: env.body.seq,
        artifact_count: artifacts,
        closed,
      });
      return { applied: true, task: projected, event, deliveries };
    }
  }
}
