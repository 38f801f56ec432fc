import { createHash } from 'node:crypto';
import { Message, Task, TaskState, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { DataSource, QueryRunner } from 'typeorm';
import {
  argsHash,
  canonicalJson,
  ChannelKey,
  encodeEnvelope,
  Envelopes,
  executionId,
  FIRST_TURN,
  newId,
  TaskStates,
  type AgentRecord,
  type Envelope,
  type Identity,
  type TaskState as WireTaskState,
  type TopicNames,
} from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import { messageIdConflict } from './task.errors.js';
import { StatementBatcher } from '@mesh/database';
import { inTransaction, insertNewTasks, lockTask, type Json, type NewTaskRow, type TaskRow } from './task-db.js';
import { listTasks } from './task-list.query.js';
import { INSERT_TASK_DELIVERIES, statusChangeBody, UPSERT_PUSH_CONFIG, type ValidPushConfig } from '../push/push-config.js';
import { isInterrupted, isTerminal, OPEN_STATE_NAMES, parseState, stateName, TERMINAL_STATE_NAMES } from './task-state.js';

/** What SendMessage asks for, after authentication and agent resolution. */
export interface AcceptInput {
  principal: Principal;
  agent: AgentRecord;
  message: Message;
  deadlineUnixMs?: number;
  traceparent?: string;
  /** A push config given with the message: stored with the task, before any event of it can exist. */
  push?: ValidPushConfig;
}

/**
 * Outcome of accepting a message: the task, and whether nothing new was accepted — a retry of an
 * accepted message (`message_id`) or the same work still running (`same_work`).
 */
export interface AcceptResult {
  task: Task;
  duplicate: false | 'message_id' | 'same_work';
}

class DedupHit extends Error {}

const hashMessage = (m: Json) => createHash('sha256').update(canonicalJson(m)).digest('hex');

/** A task the platform failed because its deadline or its turn's start-by time passed (see {@link TaskService.failOverdue}). */
export interface ExpiredTask {
  tenant: string;
  agentId: string;
  task: Task;
  reason: 'DEADLINE_EXCEEDED' | 'NOT_STARTED';
}

/** How {@link TaskService.endTurn} ends a turn. */
interface TurnEnd {
  state: TaskState;
  /** The status message (also appended to the history). */
  message?: Json;
  /** Names the push event: `{taskId}:{event}`. */
  event: string;
  /** Subject and actor of the cancel command. */
  by: { subject: string; actor: string };
  reason?: string;
}

/** Who stands behind a change the platform makes on its own (a deadline passing), in the command's identity. */
const PLATFORM_PRINCIPAL = 'mesh:dispatcher';
/** State names of `@mesh/contract` as an SQL list (constants, never input: safe to inline, and partial indexes still match). */
const sqlList = (names: readonly WireTaskState[]) => names.map((n) => `'${n}'`).join(', ');

export interface TaskServiceOptions {
  /** Told of each task created here, as stored (the projection primes its cache with it). */
  created?: (row: TaskRow, executionId: string) => void;
  /** A turn no worker started this long after its accept is failed (0, the default: never); see failOverdue. */
  startTimeoutMs?: number;
}

/**
 * Tasks as the API changes and reads them. With TaskProjection it is the only code that writes
 * tasks; every mutation of an existing task runs in a transaction holding the task row lock
 * (SELECT … FOR UPDATE), so there is one writer per task at a time whether the write comes from
 * an API call or from the event stream. Commands are written to the outbox in the same
 * transaction as the task change they belong to.
 */
export class TaskService {
  /** New tasks of concurrent requests share one statement and one commit (see insertNewTasks). */
  private readonly newTasks: StatementBatcher<NewTaskRow, boolean>;

  private readonly created?: (row: TaskRow, executionId: string) => void;
  private readonly startTimeoutMs: number;

  constructor(
    private readonly ds: DataSource,
    private readonly topics: TopicNames,
    opts: TaskServiceOptions = {},
  ) {
    this.created = opts.created;
    this.startTimeoutMs = opts.startTimeoutMs ?? 0;
    this.newTasks = new StatementBatcher((rows) => insertNewTasks(ds, rows), { maxBatch: 256, maxInFlight: 4 });
  }

  private tx<T>(work: (q: QueryRunner) => Promise<T>): Promise<T> {
    return inTransaction(this.ds, work);
  }

  /**
   * Accepts a message: dedup on (tenant, agent, messageId) first, then create the task or add
   * a turn to an interrupted one, its execution and its command, all in one transaction.
   */
  async accept(input: AcceptInput): Promise<AcceptResult> {
    const { principal, agent } = input;
    const tenant = principal.tenant;
    const incoming = Message.toJSON(input.message) as Json;
    const hash = hashMessage(incoming);
    const messageId = input.message.messageId;
    if (!input.message.taskId) {
      const work = input.message.contextId ? argsHash(incoming.parts) : undefined;
      if (work) {
        // Same work (tenant, context, parts) still running: that task, not a second one.
        const running = await this.findRunningWork(tenant, agent.id, input.message.contextId, work);
        if (running) return { task: running, duplicate: 'same_work' };
      }
      const created = await this.acceptNew(input, incoming, hash, work);
      if (created) return { task: created, duplicate: false };
      const winner = await this.findDedup(tenant, agent.id, messageId);
      if (!winner) throw new Error(`dedup row for ${messageId} vanished`);
      return this.answerDuplicate(winner, hash, messageId, tenant, agent.id);
    }
    const known = await this.findDedup(tenant, agent.id, messageId);
    if (known) return this.answerDuplicate(known, hash, messageId, tenant, agent.id);
    try {
      return await this.tx(async (q) => {
        // A follow-up turn: everything happens under the task row lock.
        const row = await lockTask(q, input.message.taskId, tenant, agent.id);
        if (!row) throw new TaskNotFoundError(`Task not found: ${input.message.taskId}`);
        const taskId = row.id;
        const contextId = row.context_id;
        const turn = row.turn + 1;
        // Dedup before anything is created: the insert waits for a concurrent twin and then loses.
        const claimed = await q.query(
          `INSERT INTO dispatcher.message_dedup (tenant, agent_id, message_id, content_hash, task_id, turn)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1`,
          [tenant, agent.id, messageId, hash, taskId, turn],
        );
        if (claimed.length === 0) throw new DedupHit();
        {
          const state = parseState(row.state)!;
          if (isTerminal(state)) {
            throw new UnsupportedOperationError(`Task ${row.id} is in a terminal state (${row.state}) and cannot be modified.`);
          }
          if (input.message.contextId && input.message.contextId !== row.context_id) {
            throw new RequestMalformedError(
              `contextId mismatch: message contextId '${input.message.contextId}' does not match task '${row.id}' contextId '${row.context_id}'`,
            );
          }
          if (!isInterrupted(state)) {
            throw new UnsupportedOperationError(
              `Task ${row.id} is ${row.state}; a follow-up message is accepted only when the task asks for input.`,
            );
          }
        }
        const now = new Date();
        const message = { ...incoming, taskId, contextId };
        const status = { state: stateName(TaskState.TASK_STATE_SUBMITTED), timestamp: now.toISOString() };
        const task: Json = { ...row.task, status, history: [...((row.task.history as Json[]) ?? []), message] };
        // One budget per task: a later turn never gets more time than the task was given.
        const budget = row.deadline_at ? new Date(row.deadline_at).getTime() : undefined;
        const deadlineUnixMs =
          budget !== undefined && input.deadlineUnixMs !== undefined
            ? Math.min(budget, input.deadlineUnixMs)
            : (budget ?? input.deadlineUnixMs);
        const identity = this.identity({ ...input, deadlineUnixMs }, taskId, contextId, turn);
        await q.query(
          `UPDATE dispatcher.tasks SET state = $2, turn = $3, status_timestamp = $4, task = $5, start_by_at = $6, version = version + 1, updated_at = now() WHERE id = $1`,
          [taskId, status.state, turn, now, task, identity.startByUnixMs !== undefined ? new Date(identity.startByUnixMs) : null],
        );
        await q.query(`INSERT INTO dispatcher.executions (execution_id, task_id, tenant, turn, message_id) VALUES ($1, $2, $3, $4, $5)`, [
          identity.executionId,
          taskId,
          tenant,
          turn,
          messageId,
        ]);
        await this.enqueue(q, agent, Envelopes.run(identity, { turn, message }));
        const p = input.push;
        if (p) await q.query(UPSERT_PUSH_CONFIG, [tenant, taskId, p.id, p.url, p.token, p.authScheme, p.authCredentials]);
        return { task: Task.fromJSON(task), duplicate: false };
      });
    } catch (err) {
      if (!(err instanceof DedupHit)) throw err;
      const winner = await this.findDedup(tenant, agent.id, messageId);
      if (!winner) throw new Error(`dedup row for ${messageId} vanished`, { cause: err });
      return this.answerDuplicate(winner, hash, messageId, tenant, agent.id);
    }
  }

  /** A SUBMITTED or WORKING task of the same tenant, agent, context and work hash. */
  private async findRunningWork(tenant: string, agentId: string, contextId: string, work: string): Promise<Task | undefined> {
    const rows: TaskRow[] = await this.ds.query(
      `SELECT task FROM dispatcher.tasks
        WHERE tenant = $1 AND agent_id = $2 AND context_id = $3 AND work_hash = $4
          AND state IN (${sqlList([TaskStates.submitted, TaskStates.working])})
        ORDER BY created_at DESC LIMIT 1`,
      [tenant, agentId, contextId, work],
    );
    return rows[0] ? Task.fromJSON(rows[0].task) : undefined;
  }

  /**
   * The hot path, a message that starts a task: dedup claim, task, execution, outbox command and
   * the push config given with it in one statement, batched with the concurrent requests' (see
   * insertNewTasks). Nothing is written when the dedup claim loses; undefined then.
   */
  private async acceptNew(input: AcceptInput, incoming: Json, hash: string, work?: string): Promise<Task | undefined> {
    const { principal, agent } = input;
    const taskId = newId();
    const contextId = input.message.contextId || newId();
    const now = new Date();
    const status = { state: stateName(TaskState.TASK_STATE_SUBMITTED), timestamp: now.toISOString() };
    const message = { ...incoming, taskId, contextId };
    const task: Json = { id: taskId, contextId, status, history: [message] };
    const identity = this.identity(input, taskId, contextId, FIRST_TURN);
    const cmd = this.command(agent, Envelopes.run(identity, { turn: FIRST_TURN, message }));
    const created = await this.newTasks.submit({
      tenant: principal.tenant,
      agent_id: agent.id,
      message_id: input.message.messageId,
      content_hash: hash,
      task_id: taskId,
      context_id: contextId,
      state: status.state,
      status_timestamp: status.timestamp,
      task,
      execution_id: identity.executionId,
      topic: cmd.topic,
      key: cmd.key,
      headers: cmd.headers,
      value: cmd.value,
      work_hash: work ?? null,
      deadline_at: input.deadlineUnixMs !== undefined ? new Date(input.deadlineUnixMs).toISOString() : null,
      start_by_at: identity.startByUnixMs !== undefined ? new Date(identity.startByUnixMs).toISOString() : null,
      push_id: input.push?.id ?? null,
      push_url: input.push?.url ?? null,
      push_token: input.push?.token ?? null,
      push_auth_scheme: input.push?.authScheme ?? null,
      push_auth_credentials: input.push?.authCredentials ?? null,
    });
    if (!created) return undefined;
    this.created?.(
      {
        id: taskId,
        tenant: principal.tenant,
        agent_id: agent.id,
        context_id: contextId,
        state: status.state,
        turn: FIRST_TURN,
        version: 0,
        status_timestamp: now,
        task,
        deadline_at: input.deadlineUnixMs !== undefined ? new Date(input.deadlineUnixMs) : null,
        start_by_at: identity.startByUnixMs !== undefined ? new Date(identity.startByUnixMs) : null,
      },
      identity.executionId,
    );
    return Task.fromJSON(task);
  }

  private identity(input: AcceptInput, taskId: string, contextId: string, turn: number): Identity {
    return {
      tenant: input.principal.tenant,
      agentId: input.agent.id,
      taskId,
      contextId,
      messageId: input.message.messageId,
      executionId: executionId(input.principal.tenant, taskId, turn),
      subject: input.principal.subject,
      actor: input.principal.actor,
      ...(input.deadlineUnixMs !== undefined ? { deadlineUnixMs: input.deadlineUnixMs } : {}),
      // Every turn gets its own start-by time, from its accept.
      ...(this.startTimeoutMs > 0 ? { startByUnixMs: Date.now() + this.startTimeoutMs } : {}),
      ...(input.traceparent ? { traceparent: input.traceparent } : {}),
    };
  }

  private async answerDuplicate(
    known: { content_hash: string; task_id: string },
    hash: string,
    messageId: string,
    tenant: string,
    agentId: string,
  ): Promise<AcceptResult> {
    if (known.content_hash !== hash) throw messageIdConflict(messageId);
    const task = await this.load(known.task_id, tenant, agentId);
    if (!task) throw new TaskNotFoundError(`Task not found: ${known.task_id}`);
    return { task, duplicate: 'message_id' };
  }

  private async findDedup(
    tenant: string,
    agentId: string,
    messageId: string,
  ): Promise<{ content_hash: string; task_id: string } | undefined> {
    const rows = await this.ds.query(
      `SELECT content_hash, task_id FROM dispatcher.message_dedup WHERE tenant = $1 AND agent_id = $2 AND message_id = $3`,
      [tenant, agentId, messageId],
    );
    return rows[0];
  }

  /** The outbox row of a command: the agent's command topic, keyed by its channel-key template. */
  private command(agent: AgentRecord, env: Envelope): { topic: string; key: string; headers: Record<string, string>; value: string } {
    const id = env.identity;
    const key = ChannelKey.parse(agent.channel?.keyTemplate).render({
      tenant: id.tenant,
      agent_id: id.agentId,
      context_id: id.contextId,
      task_id: id.taskId,
    });
    const wire = encodeEnvelope(env);
    return { topic: this.topics.commands(agent.id), key, headers: wire.headers, value: wire.value.toString('utf8') };
  }

  private async enqueue(q: QueryRunner, agent: AgentRecord, env: Envelope): Promise<void> {
    const c = this.command(agent, env);
    await q.query(`INSERT INTO dispatcher.outbox (topic, key, headers, value, agent_id) VALUES ($1, $2, $3, $4, $5)`, [
      c.topic,
      c.key,
      c.headers,
      c.value,
      agent.id,
    ]);
  }

  /** A task as its tenant sees it (undefined for unknown ids and other tenants' tasks). */
  async load(taskId: string, tenant: string, agentId: string): Promise<Task | undefined> {
    const rows: TaskRow[] = await this.ds.query(`SELECT task FROM dispatcher.tasks WHERE id = $1 AND tenant = $2 AND agent_id = $3`, [
      taskId,
      tenant,
      agentId,
    ]);
    return rows[0] ? Task.fromJSON(rows[0].task) : undefined;
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
  ): Promise<{ task: Task; lastSeq: Record<string, number> } | undefined> {
    const rows: Array<{ task: Json; last_seq: Record<string, number> }> = await this.ds.query(
      `SELECT t.task, coalesce(jsonb_object_agg(e.execution_id, e.last_seq) FILTER (WHERE e.execution_id IS NOT NULL), '{}') AS last_seq
         FROM dispatcher.tasks t LEFT JOIN dispatcher.executions e ON e.task_id = t.id
        WHERE t.id = $1 AND t.tenant = $2 AND t.agent_id = $3
        GROUP BY t.id`,
      [taskId, tenant, agentId],
    );
    return rows[0] ? { task: Task.fromJSON(rows[0].task), lastSeq: rows[0].last_seq } : undefined;
  }

  /** Newest status first, keyset pagination on (status_timestamp, id). */
  list(params: ListTasksRequest, tenant: string, agentId: string): Promise<ListTasksResponse> {
    return listTasks(this.ds, params, tenant, agentId);
  }

  /**
   * Fails up to `limit` tasks whose deadline passed more than `graceMs` ago while they were still
   * open (no worker reported in time — none running, a backlog, a worker that died): FAILED with a
   * message saying why, the turn closed (a late worker event is ignored), its push deliveries,
   * and, for an agent known here, a cancel command so a worker that still runs or later receives
   * the turn stops — all in one transaction. Expired work is failed explicitly, never left
   * SUBMITTED forever. Replicas share the work (SKIP LOCKED).
   *
   * The same for a turn still SUBMITTED more than `graceMs` after its start-by time (no worker
   * started it: none running, a backlog, or a command the broker deleted unread). Its run command
   * carries that time, and workers do not start it afterwards, so the FAILED stays true.
   */
  async failOverdue(
    graceMs: number,
    limit: number,
    agentOf: (agentId: string, tenant: string) => AgentRecord | undefined,
  ): Promise<ExpiredTask[]> {
    return this.tx(async (q) => {
      // One scan (a BitmapOr over the partial indexes tasks_open_deadline_idx and
      // tasks_not_started_idx: the state lists are written out so they apply), so locking re-checks
      // the conditions on a row changed since (a WORKING just projected). Which of the two passed is
      // decided by the database's clock, as the selection was.
      const rows: Array<TaskRow & { past_deadline: boolean }> = await q.query(
        `SELECT *, (deadline_at < now() - make_interval(secs => $1::double precision / 1000)) IS TRUE AS past_deadline
         FROM dispatcher.tasks
         WHERE (deadline_at IS NOT NULL AND deadline_at < now() - make_interval(secs => $1::double precision / 1000)
                AND state IN (${sqlList(OPEN_STATE_NAMES)}))
            OR (start_by_at IS NOT NULL AND start_by_at < now() - make_interval(secs => $1::double precision / 1000)
                AND state = '${TaskStates.submitted}')
         ORDER BY LEAST(deadline_at, start_by_at) LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [graceMs, limit],
      );
      const expired: ExpiredTask[] = [];
      for (const row of rows) {
        // Past its deadline (whatever its state), else a turn no worker started.
        const pastDeadline = row.past_deadline;
        const at = new Date((pastDeadline ? row.deadline_at : row.start_by_at)!).toISOString();
        const reason = pastDeadline ? 'DEADLINE_EXCEEDED' : 'NOT_STARTED';
        const text = pastDeadline
          ? `The task's deadline (${at}) passed before the agent reported a result; the platform failed it.`
          : `No worker of the agent started the task by ${at}; the platform failed it, and the agent will not start it later.`;
        const message = {
          messageId: newId(),
          role: 'ROLE_AGENT',
          taskId: row.id,
          contextId: row.context_id,
          parts: [{ text }],
          metadata: { 'mesh/reason': reason },
        };
        // Without the agent's record there is no channel to address (and maybe no topic: a send
        // there would hold up the outbox); its workers refuse the turn by its deadline or start-by anyway.
        const task = await this.endTurn(
          q,
          row,
          {
            state: TaskState.TASK_STATE_FAILED,
            message,
            event: pastDeadline ? 'deadline' : 'not-started',
            by: { subject: PLATFORM_PRINCIPAL, actor: PLATFORM_PRINCIPAL },
            reason: pastDeadline ? `deadline ${at} passed` : `not started by ${at}`,
          },
          agentOf(row.agent_id, row.tenant),
        );
        expired.push({ tenant: row.tenant, agentId: row.agent_id, task, reason });
      }
      return expired;
    });
  }

  /**
   * Deletes up to `limit` settled (terminal) tasks unchanged for `retentionMs`, with everything
   * stored for them: executions, message dedup rows (a retry of one of their messages after this
   * starts a new task), push configs and deliveries. Returns how many tasks went.
   */
  async deleteSettled(retentionMs: number, limit: number): Promise<number> {
    return this.tx(async (q) => {
      const deleted = await q.query(
        `WITH old AS (
         SELECT id, tenant, agent_id FROM dispatcher.tasks
          WHERE state IN (${sqlList(TERMINAL_STATE_NAMES)})
            AND updated_at < now() - make_interval(secs => $1::double precision / 1000)
          ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       dedup AS (
         DELETE FROM dispatcher.message_dedup m USING old JOIN dispatcher.executions e ON e.task_id = old.id
          WHERE m.tenant = old.tenant AND m.agent_id = old.agent_id AND m.message_id = e.message_id),
       deliveries AS (
         DELETE FROM dispatcher.push_deliveries p USING old WHERE p.tenant = old.tenant AND p.task_id = old.id)
       DELETE FROM dispatcher.tasks t USING old WHERE t.id = old.id RETURNING t.id`,
        [retentionMs, limit],
        true, // structured, as above
      );
      return (deleted.records as unknown[]).length;
    });
  }

  /** CancelTask: CANCELED at once (terminal), plus a cancel command so the worker stops. */
  async cancel(taskId: string, principal: Principal, agent: AgentRecord, reason?: string): Promise<{ task: Task; changed: boolean }> {
    return this.tx(async (q) => {
      const row = await lockTask(q, taskId, principal.tenant, agent.id);
      if (!row) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      const state = parseState(row.state)!;
      if (state === TaskState.TASK_STATE_CANCELED) return { task: Task.fromJSON(row.task), changed: false };
      if (isTerminal(state)) throw new TaskNotCancelableError(`Task not cancelable: ${taskId} is ${row.state}`);
      const task = await this.endTurn(
        q,
        row,
        { state: TaskState.TASK_STATE_CANCELED, event: 'cancel', by: { subject: principal.subject, actor: principal.actor }, reason },
        agent,
      );
      return { task, changed: true };
    });
  }

  /**
   * Ends a task's open turn with a state the dispatcher sets itself (CancelTask, a deadline
   * passing), under the task row lock `q` holds: the task (with `message` as its status message
   * and last history entry), the turn's execution closed (a late worker event is ignored), the
   * push deliveries of the change (event id `{taskId}:{event}`, with the change itself, as for
   * projected events) and, when the agent's channel is known, a cancel command so a worker still
   * running the turn stops.
   */
  private async endTurn(q: QueryRunner, row: TaskRow, end: TurnEnd, agent: AgentRecord | undefined): Promise<Task> {
    const now = new Date();
    const status = { state: stateName(end.state), timestamp: now.toISOString(), ...(end.message ? { message: end.message } : {}) };
    const task: Json = {
      ...row.task,
      status,
      ...(end.message ? { history: [...((row.task.history as Json[]) ?? []), end.message] } : {}),
    };
    await q.query(
      `UPDATE dispatcher.tasks SET state = $2, status_timestamp = $3, task = $4, version = version + 1, updated_at = now() WHERE id = $1`,
      [row.id, status.state, now, task],
    );
    const exec = executionId(row.tenant, row.id, row.turn);
    // Structured: TypeORM answers a bare UPDATE … RETURNING with [rows, count].
    const closed = (
      await q.query(
        `UPDATE dispatcher.executions SET closed = true, ended_by = $2 WHERE execution_id = $1 RETURNING message_id`,
        [exec, end.event],
        true,
      )
    ).records as Array<{ message_id: string }>;
    if (agent && closed[0]) {
      const identity: Identity = {
        tenant: row.tenant,
        agentId: row.agent_id,
        taskId: row.id,
        contextId: row.context_id,
        messageId: closed[0].message_id,
        executionId: exec,
        ...end.by,
      };
      await this.enqueue(q, agent, Envelopes.cancel(identity, end.reason ? { reason: end.reason } : {}));
    }
    const ended = Task.fromJSON(task);
    await q.query(INSERT_TASK_DELIVERIES, [
      `${row.id}:${end.event}`,
      statusChangeBody(row.id, row.context_id, ended.status!),
      row.tenant,
      row.id,
    ]);
    return ended;
  }
}
