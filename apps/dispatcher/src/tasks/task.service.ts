import { createHash } from 'node:crypto';
import { Message, Task, TaskState, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { DataSource, QueryRunner } from 'typeorm';
import {
  canonicalJson,
  ChannelKey,
  encodeEnvelope,
  Envelopes,
  executionId,
  newId,
  type AgentRecord,
  type Envelope,
  type Identity,
  type TaskEvent,
  type TopicNames,
} from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import { messageIdConflict } from './task.errors.js';
import { isInterrupted, isTerminal, parseState, stateName, stateRank } from './task-state.js';

type Json = Record<string, unknown>;

interface TaskRow {
  id: string;
  tenant: string;
  agent_id: string;
  context_id: string;
  state: string;
  turn: number;
  status_timestamp: Date;
  task: Json;
}

/** What SendMessage asks for, after authentication and agent resolution. */
export interface AcceptInput {
  principal: Principal;
  agent: AgentRecord;
  message: Message;
  deadlineUnixMs?: number;
  traceparent?: string;
}

/** Outcome of accepting a message: the task, and whether this was a retry of an accepted one. */
export interface AcceptResult {
  task: Task;
  duplicate: boolean;
}

/** Outcome of projecting one event. */
export type ProjectionOutcome =
  | { applied: true; task: Task; event: TaskEvent }
  | {
      applied: false;
      reason:
        'unknown-task' | 'identity-mismatch' | 'unknown-execution' | 'stale-turn' | 'turn-closed' | 'duplicate' | 'regression' | 'invalid';
    };

class DedupHit extends Error {}

const hashMessage = (m: Json) => createHash('sha256').update(canonicalJson(m)).digest('hex');

/**
 * The only code that writes tasks. Every mutation runs in one transaction holding the task row
 * lock (SELECT … FOR UPDATE), so there is one writer per task at a time whether the write comes
 * from an API call or from the event stream; commands are written to the outbox in the same
 * transaction as the task change they belong to.
 */
export class TaskService {
  constructor(
    private readonly ds: DataSource,
    private readonly topics: TopicNames,
  ) {}

  private async tx<T>(work: (q: QueryRunner) => Promise<T>): Promise<T> {
    const q = this.ds.createQueryRunner();
    await q.connect();
    await q.startTransaction('READ COMMITTED');
    try {
      const out = await work(q);
      await q.commitTransaction();
      return out;
    } catch (err) {
      await q.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await q.release();
    }
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
      const created = await this.acceptNew(input, incoming, hash);
      if (created) return { task: created, duplicate: false };
      const winner = await this.findDedup(tenant, agent.id, messageId);
      if (!winner) throw new Error(`dedup row for ${messageId} vanished`);
      return this.answerDuplicate(winner, hash, messageId, tenant, agent.id);
    }
    const known = await this.findDedup(tenant, agent.id, messageId);
    if (known) return this.answerDuplicate(known, hash, messageId, tenant, agent.id);
    try {
      return await this.tx(async (q) => {
        let row: TaskRow | undefined;
        let taskId: string;
        let contextId: string;
        let turn: number;
        if (input.message.taskId) {
          row = await this.lockTask(q, input.message.taskId, tenant, agent.id);
          if (!row) throw new TaskNotFoundError(`Task not found: ${input.message.taskId}`);
          taskId = row.id;
          contextId = row.context_id;
          turn = row.turn + 1;
        } else {
          taskId = newId();
          contextId = input.message.contextId || newId();
          turn = 1;
        }
        // Dedup before anything is created: the insert waits for a concurrent twin and then loses.
        const claimed = await q.query(
          `INSERT INTO dispatcher.message_dedup (tenant, agent_id, message_id, content_hash, task_id, turn)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1`,
          [tenant, agent.id, messageId, hash, taskId, turn],
        );
        if (claimed.length === 0) throw new DedupHit();
        if (row) {
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
        const task: Json = row
          ? { ...row.task, status, history: [...((row.task.history as Json[]) ?? []), message] }
          : { id: taskId, contextId, status, history: [message] };
        if (row) {
          await q.query(
            `UPDATE dispatcher.tasks SET state = $2, turn = $3, status_timestamp = $4, task = $5, updated_at = now() WHERE id = $1`,
            [taskId, status.state, turn, now, task],
          );
        } else {
          await q.query(
            `INSERT INTO dispatcher.tasks (id, tenant, agent_id, context_id, state, turn, status_timestamp, task) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
            [taskId, tenant, agent.id, contextId, status.state, turn, now, task],
          );
        }
        const identity: Identity = {
          tenant,
          agentId: agent.id,
          taskId,
          contextId,
          messageId,
          executionId: executionId(tenant, taskId, turn),
          subject: principal.subject,
          actor: principal.actor,
          ...(input.deadlineUnixMs !== undefined ? { deadlineUnixMs: input.deadlineUnixMs } : {}),
          ...(input.traceparent ? { traceparent: input.traceparent } : {}),
        };
        await q.query(`INSERT INTO dispatcher.executions (execution_id, task_id, tenant, turn, message_id) VALUES ($1, $2, $3, $4, $5)`, [
          identity.executionId,
          taskId,
          tenant,
          turn,
          messageId,
        ]);
        await this.enqueue(q, agent, Envelopes.run(identity, { turn, message }));
        return { task: Task.fromJSON(task), duplicate: false };
      });
    } catch (err) {
      if (!(err instanceof DedupHit)) throw err;
      const winner = await this.findDedup(tenant, agent.id, messageId);
      if (!winner) throw new Error(`dedup row for ${messageId} vanished`, { cause: err });
      return this.answerDuplicate(winner, hash, messageId, tenant, agent.id);
    }
  }

  /**
   * The hot path, a message that starts a task: dedup claim, task, execution and outbox command
   * in one statement (data-modifying CTEs run atomically, in one round trip). Nothing is written
   * when the dedup claim loses; undefined then.
   */
  private async acceptNew(input: AcceptInput, incoming: Json, hash: string): Promise<Task | undefined> {
    const { principal, agent } = input;
    const tenant = principal.tenant;
    const taskId = newId();
    const contextId = input.message.contextId || newId();
    const now = new Date();
    const status = { state: stateName(TaskState.TASK_STATE_SUBMITTED), timestamp: now.toISOString() };
    const message = { ...incoming, taskId, contextId };
    const task: Json = { id: taskId, contextId, status, history: [message] };
    const identity = this.identity(input, taskId, contextId, 1);
    const cmd = this.command(agent, Envelopes.run(identity, { turn: 1, message }));
    const rows: Array<{ n: number }> = await this.ds.query(
      `WITH d AS (
         INSERT INTO dispatcher.message_dedup (tenant, agent_id, message_id, content_hash, task_id, turn)
         VALUES ($1, $2, $3, $4, $5, 1) ON CONFLICT DO NOTHING RETURNING task_id),
       t AS (
         INSERT INTO dispatcher.tasks (id, tenant, agent_id, context_id, state, turn, status_timestamp, task)
         SELECT task_id, $1, $2, $6, $7, 1, $8, $9 FROM d RETURNING id),
       e AS (
         INSERT INTO dispatcher.executions (execution_id, task_id, tenant, turn, message_id)
         SELECT $10, id, $1, 1, $3 FROM t RETURNING execution_id),
       o AS (
         INSERT INTO dispatcher.outbox (topic, key, headers, value, agent_id)
         SELECT $11, $12, $13, $14, $2 FROM e RETURNING id)
       SELECT count(*)::int AS n FROM o`,
      [
        tenant,
        agent.id,
        input.message.messageId,
        hash,
        taskId,
        contextId,
        status.state,
        now,
        task,
        identity.executionId,
        cmd.topic,
        cmd.key,
        cmd.headers,
        cmd.value,
      ],
    );
    return rows[0]?.n === 1 ? Task.fromJSON(task) : undefined;
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
    return { task, duplicate: true };
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

  private async lockTask(q: QueryRunner, taskId: string, tenant: string, agentId?: string): Promise<TaskRow | undefined> {
    const rows: TaskRow[] = await q.query(
      `SELECT * FROM dispatcher.tasks WHERE id = $1 AND tenant = $2 ${agentId ? 'AND agent_id = $3' : ''} FOR UPDATE`,
      agentId ? [taskId, tenant, agentId] : [taskId, tenant],
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

  /** Newest status first, keyset pagination on (status_timestamp, id). */
  async list(params: ListTasksRequest, tenant: string, agentId: string): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? 50;
    const where = ['tenant = $1', 'agent_id = $2'];
    const args: unknown[] = [tenant, agentId];
    if (params.contextId) {
      args.push(params.contextId);
      where.push(`context_id = $${args.length}`);
    }
    if (params.status) {
      args.push(stateName(params.status));
      where.push(`state = $${args.length}`);
    }
    if (params.statusTimestampAfter) {
      args.push(new Date(params.statusTimestampAfter));
      where.push(`status_timestamp > $${args.length}`);
    }
    const filter = where.join(' AND ');
    const [{ total }] = await this.ds.query(`SELECT count(*)::int AS total FROM dispatcher.tasks WHERE ${filter}`, args);
    const pageArgs = [...args];
    let cursor = '';
    if (params.pageToken) {
      const [ts, id] = decodeCursor(params.pageToken);
      pageArgs.push(ts, id);
      cursor = ` AND (status_timestamp, id) < ($${pageArgs.length - 1}::timestamptz, $${pageArgs.length})`;
    }
    pageArgs.push(pageSize + 1);
    const rows: Array<TaskRow & { ts: string }> = await this.ds.query(
      `SELECT id, task, to_char(status_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ts
       FROM dispatcher.tasks WHERE ${filter}${cursor} ORDER BY status_timestamp DESC, id DESC LIMIT $${pageArgs.length}`,
      pageArgs,
    );
    const page = rows.slice(0, pageSize);
    const last = page[page.length - 1];
    return {
      tasks: page.map((r) => {
        const t = Task.fromJSON(r.task);
        if (!params.includeArtifacts) t.artifacts = [];
        return t;
      }),
      nextPageToken: rows.length > pageSize && last ? encodeCursor(last.ts, last.id) : '',
      pageSize,
      totalSize: total,
    };
  }

  /** CancelTask: CANCELED at once (terminal), plus a cancel command so the worker stops. */
  async cancel(taskId: string, principal: Principal, agent: AgentRecord, reason?: string): Promise<{ task: Task; changed: boolean }> {
    return this.tx(async (q) => {
      const row = await this.lockTask(q, taskId, principal.tenant, agent.id);
      if (!row) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      const state = parseState(row.state)!;
      if (state === TaskState.TASK_STATE_CANCELED) return { task: Task.fromJSON(row.task), changed: false };
      if (isTerminal(state)) throw new TaskNotCancelableError(`Task not cancelable: ${taskId} is ${row.state}`);
      const now = new Date();
      const status = { state: stateName(TaskState.TASK_STATE_CANCELED), timestamp: now.toISOString() };
      const task = { ...row.task, status };
      await q.query(`UPDATE dispatcher.tasks SET state = $2, status_timestamp = $3, task = $4, updated_at = now() WHERE id = $1`, [
        taskId,
        status.state,
        now,
        task,
      ]);
      const exec = executionId(row.tenant, row.id, row.turn);
      await q.query(`UPDATE dispatcher.executions SET closed = true WHERE execution_id = $1`, [exec]);
      const [{ message_id }] = await q.query(`SELECT message_id FROM dispatcher.executions WHERE execution_id = $1`, [exec]);
      const identity: Identity = {
        tenant: row.tenant,
        agentId: agent.id,
        taskId,
        contextId: row.context_id,
        messageId: message_id,
        executionId: exec,
        subject: principal.subject,
        actor: principal.actor,
      };
      await this.enqueue(q, agent, Envelopes.cancel(identity, reason ? { reason } : {}));
      return { task: Task.fromJSON(task), changed: true };
    });
  }

  /**
   * Projects one worker event into the task: ignored when the task or execution is unknown, the
   * identity does not match, the turn is over, or `seq` is not above the last applied one; states
   * never go back; COMPLETED without any artifact of the turn becomes FAILED (no result is no
   * success).
   */
  async applyEvent(env: TaskEvent): Promise<ProjectionOutcome> {
    const id = env.identity;
    return this.tx(async (q) => {
      // Task row (locked) and the event's execution in one round trip.
      const rows: Array<TaskRow & { e_turn: number | null; last_seq: number; artifact_count: number; closed: boolean }> = await q.query(
        `SELECT t.*, e.turn AS e_turn, e.last_seq, e.artifact_count, e.closed
         FROM dispatcher.tasks t LEFT JOIN dispatcher.executions e ON e.execution_id = $2 AND e.task_id = t.id
         WHERE t.id = $1 AND t.tenant = $3 FOR UPDATE OF t`,
        [id.taskId, id.executionId, id.tenant],
      );
      const row = rows[0];
      if (!row) return { applied: false, reason: 'unknown-task' };
      if (row.agent_id !== id.agentId || row.context_id !== id.contextId) return { applied: false, reason: 'identity-mismatch' };
      if (row.e_turn === null) return { applied: false, reason: 'unknown-execution' };
      const exec = { turn: row.e_turn, last_seq: row.last_seq, artifact_count: row.artifact_count, closed: row.closed };
      delete (row as Partial<typeof row>).e_turn;
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
        if (stateRank(next) < stateRank(state)) {
          await q.query(`UPDATE dispatcher.executions SET last_seq = $2 WHERE execution_id = $1`, [id.executionId, env.body.seq]);
          return { applied: false, reason: 'regression' };
        }
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
      // Both rows in one statement; the status timestamp moves only with the status.
      await q.query(
        `WITH t AS (
           UPDATE dispatcher.tasks SET state = $2, task = $3, updated_at = now(),
             status_timestamp = CASE WHEN $4 THEN now() ELSE status_timestamp END
           WHERE id = $1 RETURNING id)
         UPDATE dispatcher.executions SET last_seq = $6, artifact_count = $7, closed = $8 WHERE execution_id = $5`,
        [row.id, stateName(state), task, env.kind === 'task.status', id.executionId, env.body.seq, artifacts, closed],
      );
      return { applied: true, task: Task.fromJSON(task), event };
    });
  }
}

function encodeCursor(ts: string, id: string): string {
  return Buffer.from(JSON.stringify([ts, id]), 'utf8').toString('base64url');
}

function decodeCursor(token: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw new RequestMalformedError('pageToken is not a token this server issued');
}
