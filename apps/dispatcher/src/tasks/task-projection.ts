import { Task, TaskState } from '@a2a-js/sdk';
import type { DataSource } from 'typeorm';
import { Envelopes, newId, type TaskEvent } from '@mesh/contract';
import { batchKeys, preparedQuery, StatementBatcher } from '@mesh/database';
import type { Json, TaskRow } from './task.repository.js';
import { isInterrupted, isTerminal, parseState, stateName, stateRank } from './task-state.js';
import { streamEventOf } from './stream-updates.js';
import { NOTIFIED_IDS, TaskCommitSignal } from './task-commit-feed.js';

/*
 * The projection keeps its two statements (readProjected, writeProjected) beside the decisions
 * they serve rather than in TaskRepository: a write is a compare-and-set on the version its read
 * returned, batched across tasks, and its row shapes (ProjectedRow, ProjectionWrite) exist only for
 * that decide-then-write loop. Every other task statement is TaskRepository's.
 */

/** How many of a task's newest stream events stay logged by default (DISPATCHER_STREAM_EVENTS_KEPT). */
export const DEFAULT_EVENTS_KEPT = 1000;

/** Outcome of projecting one event. */
export type ProjectionOutcome =
  /**
   * `deliveries`: push deliveries recorded with the write (counted on the last applied event of a run).
   * `late`: an event of a turn the dispatcher had already ended (cancel, deadline): recorded on the
   * task without changing its state (see {@link lateOfEndedTurn}).
   */
  | { applied: true; task: Task; event: TaskEvent; deliveries: number; late: boolean; logged: LoggedEvent }
  | {
      applied: false;
      reason:
        'unknown-task' | 'identity-mismatch' | 'unknown-execution' | 'stale-turn' | 'turn-closed' | 'duplicate' | 'regression' | 'invalid';
    };

type ProjectedRow = TaskRow & {
  e_turn: number | null;
  last_seq: number;
  artifact_count: number;
  closed: boolean;
  /** What ended the turn when the dispatcher did (`cancel`, `deadline`, `not-started`); null otherwise. */
  ended_by: string | null;
};
/** An event of a task's stream as logged: its per-task number and the StreamResponse (as JSON). */
export type LoggedEvent = { seq: number; event: Json };
/**
 * A push notification of the run's `at`-th applied event (1-based): its delivery carries that
 * event's number, and its body is that event as logged (`events[at - 1]`), written once.
 */
type RunPush = { eventId: string; at: number };
type ProjectionKey = { task_id: string; execution_id: string; tenant: string };
type ProjectionWrite = {
  id: string;
  state: string;
  task: Json;
  status_changed: boolean;
  /** `task.status.timestamp`: the list order and its cursors use the time callers see. */
  status_timestamp: string | null;
  execution_id: string;
  seq: number;
  artifact_count: number;
  closed: boolean;
  /** The task version the write was decided on. */
  version: number;
  tenant: string;
  /** Push deliveries recorded with the change: each applied event's id and place in `events`, for each config of the task. */
  pushes: RunPush[];
  /** The applied events as the task's stream shows them, numbered on from the task's `event_seq`. */
  events: Json[];
};

/** Task rows with the events' executions, for a batch of events (undefined: no such task for that tenant). */
async function readProjected(ds: DataSource, keys: ProjectionKey[]): Promise<Array<ProjectedRow | undefined>> {
  const rows = await preparedQuery<ProjectedRow & { ord: number }>(
    ds,
    'dispatcher-projection-read',
    // The columns by name (TaskRow's): a prepared `t.*` fails once a migration adds a column.
    `SELECT v.ord, t.id, t.tenant, t.agent_id, t.context_id, t.state, t.turn, t.version, t.status_timestamp, t.task,
            t.deadline_at, t.start_by_at, e.turn AS e_turn, e.last_seq, e.artifact_count, e.closed, e.ended_by
     FROM jsonb_to_recordset($1::jsonb) AS v(task_id text, execution_id text, tenant text, ord int)
     JOIN dispatcher.tasks t ON t.id = v.task_id AND t.tenant = v.tenant AND t.id = ANY (${batchKeys('$1', 'task_id')})
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
async function writeProjected(
  ds: DataSource,
  writes: ProjectionWrite[],
  kept: number,
  signal: Pick<TaskCommitSignal, 'channel' | 'sender'>,
): Promise<Array<WriteResult | undefined>> {
  // Two writes of one task in one statement could both pass the version check.
  if (new Set(writes.map((w) => w.id)).size !== writes.length) throw new Error('one task twice in a projection batch');
  const done = await preparedQuery<{ id: string; deliveries: number; base: string }>(
    ds,
    'dispatcher-projection-write',
    `WITH v AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(
         id text, state text, task jsonb, status_changed boolean, status_timestamp timestamptz, execution_id text, seq int, artifact_count int, closed boolean,
         version int, tenant text, pushes jsonb, events jsonb)),
     lk AS (
       -- The batch's rows locked in id order, the order of every writer of several tasks
       -- (TaskRepository.lockTree): a batch and a cascade over the same tree never deadlock.
       SELECT id FROM dispatcher.tasks WHERE id = ANY (${batchKeys('$1', 'id')}) ORDER BY id FOR UPDATE),
     t AS (
       UPDATE dispatcher.tasks x SET state = v.state, task = v.task, version = x.version + 1, updated_at = now(),
         status_timestamp = CASE WHEN v.status_changed THEN coalesce(v.status_timestamp, now()) ELSE x.status_timestamp END,
         event_seq = x.event_seq + jsonb_array_length(v.events)
       FROM v JOIN lk ON lk.id = v.id WHERE x.id = v.id AND x.version = v.version AND x.id = ANY (${batchKeys('$1', 'id')})
       RETURNING x.id, x.event_seq - jsonb_array_length(v.events) AS base),
     l AS (
       -- The stream's events, numbered on from the task's counter in the same statement: gap-free per task.
       INSERT INTO dispatcher.task_events (task_id, seq, event)
       SELECT v.id, t.base + n.ord, n.ev FROM v JOIN t ON t.id = v.id
       CROSS JOIN LATERAL jsonb_array_elements(v.events) WITH ORDINALITY AS n(ev, ord)
       -- Retention: the newest $2 events of each task are kept (the DELETE below cannot see these rows).
       WHERE n.ord > jsonb_array_length(v.events) - $2::bigint RETURNING 1),
     k AS (
       DELETE FROM dispatcher.task_events d USING v JOIN t ON t.id = v.id
       WHERE d.task_id = v.id AND d.seq <= t.base + jsonb_array_length(v.events) - $2::bigint RETURNING 1),
     e AS (
       UPDATE dispatcher.executions e SET last_seq = v.seq, artifact_count = v.artifact_count, closed = v.closed
       -- Driven by t (the rows just updated, each joined by its key): an ANY of the batch's keys here
       -- became the index condition of every row's lookup, the batch's keys scanned once per row.
       FROM v JOIN t ON t.id = v.id WHERE e.execution_id = v.execution_id
       RETURNING v.id),
     p AS (
       -- In event order: a task's deliveries go out in id order.
       INSERT INTO dispatcher.push_deliveries (event_id, tenant, task_id, config_id, body, stream_seq)
       SELECT n.push->>'eventId', c.tenant, c.task_id, c.id, v.events->((n.push->>'at')::int - 1), t.base + (n.push->>'at')::bigint
       FROM v JOIN e ON e.id = v.id JOIN t ON t.id = v.id
       CROSS JOIN LATERAL jsonb_array_elements(v.pushes) WITH ORDINALITY AS n(push, ord)
       JOIN dispatcher.push_configs c ON c.tenant = v.tenant AND c.task_id = v.id
       ORDER BY n.ord, c.created_at, c.id
       ON CONFLICT DO NOTHING RETURNING task_id),
     s AS (
       -- The other replicas' watchers of these tasks read their logs once this commits
       -- (TaskCommitFeed): the ids in chunks well under NOTIFY's 8000-byte payload (NOTIFIED_IDS).
       SELECT pg_notify($3, $4 || ' ' || string_agg(c.id, ',')) FROM (
         SELECT t.id, (row_number() OVER () - 1) / ${NOTIFIED_IDS.perNotification} AS chunk
         FROM t WHERE length(t.id) <= ${NOTIFIED_IDS.maxLength}) c
       GROUP BY c.chunk)
     SELECT e.id, (SELECT count(*)::int FROM p WHERE p.task_id = e.id) AS deliveries, t.base
     FROM e JOIN t ON t.id = e.id CROSS JOIN (SELECT count(*) FROM s) AS told`,
    [JSON.stringify(writes), kept, signal.channel, signal.sender],
  );
  const written = new Map(done.map((d) => [d.id, { deliveries: d.deliveries, base: Number(d.base) }]));
  return writes.map((w) => written.get(w.id));
}

/** A write that won: deliveries recorded, and the task's event number before its events. */
type WriteResult = { deliveries: number; base: number };

/**
 * Applies worker events to tasks: the event-stream side of the single writer (see TaskRepository).
 * The events of one task reach it in order, one batch at a time (the keyed consumer, and one
 * consumer per partition across replicas); API writes to the same task are detected by the
 * version check.
 */
export class TaskProjection {
  /**
   * Rows this projector wrote last, by task id: the next event of the task (usually within
   * milliseconds) skips the read. Safe because every write checks the version it was decided on;
   * a stale entry makes the write miss, and the event is decided again on a fresh read.
   */
  private readonly recent = new Map<string, ProjectedRow & { executionId: string }>();

  private readonly reads: StatementBatcher<ProjectionKey, ProjectedRow | undefined>;
  private readonly writes: StatementBatcher<ProjectionWrite, WriteResult | undefined>;

  /**
   * `pushEventIdOf` gives the stable id of an event's push notification (undefined: none is
   * recorded); its deliveries are recorded in the same statement as the change, with the event as
   * the stream shows it for body. `eventsKept`: how many of a
   * task's newest stream events stay logged for a caller that resumes (older ones are deleted).
   */
  constructor(
    ds: DataSource,
    private readonly pushEventIdOf: (event: TaskEvent) => string | undefined = () => undefined,
    private readonly cacheSize = 10_000,
    eventsKept = DEFAULT_EVENTS_KEPT,
    signal: Pick<TaskCommitSignal, 'channel' | 'sender'> = new TaskCommitSignal(),
  ) {
    const opts = { maxBatch: 256, maxInFlight: 4 };
    this.reads = new StatementBatcher((keys) => readProjected(ds, keys), opts);
    this.writes = new StatementBatcher((writes) => writeProjected(ds, writes, eventsKept, signal), opts);
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
    this.remember(executionId, { ...row, e_turn: row.turn, last_seq: -1, artifact_count: 0, closed: false, ended_by: null });
  }

  /** Projects one worker event (see {@link applyEvents}). */
  async applyEvent(env: TaskEvent): Promise<ProjectionOutcome> {
    return (await this.applyEvents([env]))[0];
  }

  /**
   * Projects consecutive worker events of one task, in order, one outcome each. An event is
   * ignored when the task or execution is unknown, the identity does not match, the turn is over,
   * or its `seq` is not above the last applied one; states never go back; COMPLETED without any
   * artifact of the turn becomes FAILED (no result is no success). The events of one execution are
   * decided together in memory and written in ONE statement (task, execution, push deliveries of
   * each applied event): an artifact and the COMPLETED that follows it cost one write, and the
   * task is never stored with the one and without the other.
   */
  async applyEvents(envs: readonly TaskEvent[]): Promise<ProjectionOutcome[]> {
    const outcomes: ProjectionOutcome[] = [];
    for (let i = 0; i < envs.length;) {
      // A run: the following events of the same task, execution and tenant.
      const first = envs[i].identity;
      let j = i + 1;
      while (
        j < envs.length &&
        envs[j].identity.taskId === first.taskId &&
        envs[j].identity.executionId === first.executionId &&
        envs[j].identity.tenant === first.tenant
      )
        j++;
      outcomes.push(...(await this.applyRun(envs.slice(i, j))));
      i = j;
    }
    return outcomes;
  }

  private async applyRun(envs: TaskEvent[]): Promise<ProjectionOutcome[]> {
    // Optimistic: read, decide, then write only if the task's version is still the one read. A
    // concurrent writer (CancelTask, a follow-up turn) makes the write miss and the events are
    // decided again on the new state. One or two round trips per run (see `recent`).
    for (let attempt = 1; ; attempt++) {
      const outcomes = await this.tryRun(envs);
      if (outcomes !== 'conflict') return outcomes;
      this.recent.delete(envs[0].identity.taskId);
      if (attempt >= 10) throw new Error(`task ${envs[0].identity.taskId} kept changing while applying events`);
    }
  }

  private async tryRun(envs: TaskEvent[]): Promise<ProjectionOutcome[] | 'conflict'> {
    const id = envs[0].identity;
    const cached = this.recent.get(id.taskId);
    let row: ProjectedRow | undefined;
    if (cached && cached.executionId === id.executionId && cached.tenant === id.tenant) row = cached;
    else {
      // Task row and the events' execution in one round trip (shared with concurrent events).
      row = await this.reads.submit({ task_id: id.taskId, execution_id: id.executionId, tenant: id.tenant });
    }
    if (!row) return envs.map(() => ({ applied: false, reason: 'unknown-task' }));
    const current: Decided = {
      state: parseState(row.state)!,
      task: { ...row.task },
      lastSeq: row.last_seq,
      artifacts: row.artifact_count,
      closed: row.closed,
      statusChanged: false,
    };
    const decided: Array<{ event: TaskEvent; projected: Task; late: boolean } | Exclude<ProjectionOutcome, { applied: true }>> = [];
    const pushes: RunPush[] = [];
    const events: Json[] = [];
    for (const env of envs) {
      const d = decide(row, current, env);
      if ('reason' in d) {
        decided.push(d);
        continue;
      }
      const projected = Task.fromJSON(current.task);
      // A push body is the stream's event (a StreamResponse as projected): made once for both.
      events.push(streamEventOf(d.event, env.kind === 'task.status' ? projected.status : undefined));
      const pushEventId = this.pushEventIdOf(d.event);
      if (pushEventId !== undefined) pushes.push({ eventId: pushEventId, at: events.length });
      decided.push({ event: d.event, projected, late: d.late });
    }
    if (!decided.some((d) => 'event' in d)) return decided as ProjectionOutcome[];
    // One statement (shared with concurrent tasks' writes) for task, execution and push deliveries,
    // only if nobody wrote the task since it was read; the status timestamp moves only with the status.
    const written = await this.writes.submit({
      id: row.id,
      state: stateName(current.state),
      task: current.task,
      status_changed: current.statusChanged,
      status_timestamp: ((current.task.status as Json | undefined)?.timestamp as string | undefined) ?? null,
      execution_id: id.executionId,
      seq: current.lastSeq,
      artifact_count: current.artifacts,
      closed: current.closed,
      version: row.version,
      tenant: id.tenant,
      pushes,
      events,
    });
    if (written === undefined) return 'conflict';
    this.remember(id.executionId, {
      ...row,
      state: stateName(current.state),
      task: current.task,
      version: row.version + 1,
      last_seq: current.lastSeq,
      artifact_count: current.artifacts,
      closed: current.closed,
    });
    // The run's deliveries are reported with its last applied event (the one that wakes the sender).
    const lastApplied = decided.findLastIndex((d) => 'event' in d);
    let seq = written.base;
    return decided.map((d, k) => {
      if (!('event' in d)) return d;
      seq += 1;
      const logged = { seq, event: events[seq - written.base - 1] };
      return {
        applied: true,
        task: d.projected,
        event: d.event,
        deliveries: k === lastApplied ? written.deliveries : 0,
        late: d.late,
        logged,
      };
    });
  }
}

/** A task's projected state while a run of events is decided (mutated by {@link decide}). */
interface Decided {
  state: TaskState;
  task: Json;
  lastSeq: number;
  artifacts: number;
  closed: boolean;
  statusChanged: boolean;
}

/**
 * Decides one event against the task as projected so far (`row` as read, `cur` with the run's
 * earlier events applied): either why it is ignored, or applied — `cur` changed, and the event as
 * projected (a COMPLETED without an artifact of the turn is rewritten to FAILED).
 */
function decide(row: ProjectedRow, cur: Decided, env: TaskEvent): Decision {
  const id = env.identity;
  if (row.agent_id !== id.agentId || row.context_id !== id.contextId) return { applied: false, reason: 'identity-mismatch' };
  if (row.e_turn === null) return { applied: false, reason: 'unknown-execution' };
  if (row.e_turn !== row.turn) return { applied: false, reason: 'stale-turn' };
  if (cur.closed) return lateOfEndedTurn(row, cur, env);
  if (env.body.seq <= cur.lastSeq) return { applied: false, reason: 'duplicate' };
  let event: TaskEvent = env;
  if (env.kind === 'task.status') {
    const next = parseState(env.body.state);
    if (next === undefined || next === TaskState.TASK_STATE_SUBMITTED) return { applied: false, reason: 'invalid' };
    if (stateRank(next) < stateRank(cur.state)) return { applied: false, reason: 'regression' };
    let statusMessage: Json | undefined = env.body.message ? { ...env.body.message, taskId: row.id, contextId: row.context_id } : undefined;
    let state = next;
    if (state === TaskState.TASK_STATE_COMPLETED && cur.artifacts === 0) {
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
    const task: Json = { ...cur.task };
    task.status = { state: stateName(state), timestamp: new Date().toISOString(), ...(statusMessage ? { message: statusMessage } : {}) };
    if (statusMessage) task.history = [...((task.history as Json[]) ?? []), statusMessage];
    cur.task = task;
    cur.state = state;
    // A delegating turn ends WORKING: the task goes on through its children (DelegationService).
    cur.closed = isTerminal(state) || isInterrupted(state) || env.body.delegation !== undefined;
    cur.statusChanged = true;
  } else addArtifact(cur, env);
  cur.lastSeq = env.body.seq;
  return { event, late: false };
}

type Decision = { event: TaskEvent; late: boolean } | { applied: false; reason: Exclude<ProjectionOutcome, { applied: true }>['reason'] };

function addArtifact(cur: Decided, env: Extract<TaskEvent, { kind: 'task.artifact' }>): void {
  const incoming = env.body.artifact as Json & { artifactId?: string; parts?: unknown[] };
  const list = [...((cur.task.artifacts as Array<Json & { artifactId?: string; parts?: unknown[] }>) ?? [])];
  const at = list.findIndex((a) => a.artifactId && a.artifactId === incoming.artifactId);
  if (at >= 0 && env.body.append) list[at] = { ...list[at], parts: [...(list[at].parts ?? []), ...(incoming.parts ?? [])] };
  else if (at >= 0) list[at] = incoming;
  else list.push(incoming);
  cur.task = { ...cur.task, artifacts: list };
  cur.artifacts += 1;
}

/** `TASK_STATE_INPUT_REQUIRED` → `input required`. */
const label = (state: string) =>
  state
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, ' ');

/**
 * An event of a turn that is over. Closed by its worker's final event, nothing can follow it (the
 * execution ledger re-emits a finished turn's events with their seqs): ignored. Ended by the
 * dispatcher (CancelTask, a deadline), the worker may still have been running it and may have made
 * side effects — a refund that went through before the cancel reached the call. What it reports
 * afterwards is recorded without changing the task's state: its artifacts are added, and its final
 * settled status becomes the status message (`mesh/agent_state`: the state the worker ended with;
 * its `mesh/side_effects` kept), so the caller sees what happened anyway. Progress is ignored.
 */
function lateOfEndedTurn(row: ProjectedRow, cur: Decided, env: TaskEvent): Decision {
  if (!row.ended_by) return { applied: false, reason: 'turn-closed' };
  if (env.body.seq <= cur.lastSeq) return { applied: false, reason: 'duplicate' };
  if (env.kind === 'task.artifact') {
    addArtifact(cur, env);
    cur.lastSeq = env.body.seq;
    return { event: env, late: true };
  }
  // The worker's end of the turn (a settled state, as the normal path reads it); progress is dropped.
  const reportedState = parseState(env.body.state);
  if (reportedState === undefined || !(isTerminal(reportedState) || isInterrupted(reportedState)))
    return { applied: false, reason: 'turn-closed' };
  const status = cur.task.status as (Json & { message?: Json & { metadata?: Json } }) | undefined;
  const reported = env.body.message as (Json & { parts?: Json[]; metadata?: Json }) | undefined;
  const message: Json = {
    messageId: newId(),
    role: 'ROLE_AGENT',
    taskId: row.id,
    contextId: row.context_id,
    parts: [
      {
        text: `After the task was ${label(stateName(cur.state))} (${row.ended_by}), the agent ended its turn as ${label(env.body.state)}.`,
      },
      ...(reported?.parts ?? []),
    ],
    // The dispatcher's own (`mesh/reason` of a deadline) stays beside the worker's.
    metadata: { ...(status?.message?.metadata ?? {}), ...(reported?.metadata ?? {}), 'mesh/agent_state': env.body.state },
  };
  cur.task = { ...cur.task, status: { ...status, message }, history: [...((cur.task.history as Json[]) ?? []), message] };
  cur.lastSeq = env.body.seq;
  // As the task now reads: its own state, the report as the message.
  return { event: Envelopes.status(env.identity, { ...env.body, state: stateName(cur.state), message }), late: true };
}
