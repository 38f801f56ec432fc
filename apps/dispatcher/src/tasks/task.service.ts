import { createHash } from 'node:crypto';
import { Message, Task, TaskState, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { DataSource } from 'typeorm';
import {
  argsHash,
  canonicalJson,
  Envelopes,
  Headers,
  executionId,
  FIRST_TURN,
  newId,
  type AgentRecord,
  type Identity,
} from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import { messageIdConflict } from './task.errors.js';
import { CommandTooLargeError, type OutboxCommands } from '../outbox/outbox-command.js';
import type { UndeliverableCommand } from '../outbox/outbox.relay.js';
import { TaskRepository, type Json, type TaskEventPage, type TaskRow, type TaskTransaction, type TurnRow } from './task.repository.js';
export type { TaskRow, TaskTransaction } from './task.repository.js';
import { listQuery, listResponse } from './task-list.js';
import type { ValidPushConfig } from '../push/push-config.js';
import { statusChangeEventOf } from './stream-updates.js';
import { isTerminal, OPEN_STATE_NAMES, parseState, stateName } from './task-state.js';
import { ended, followUpRefusal, resubmitted, resumed, turnDeadline } from './task-turn.js';
import type { ChangedTask } from './task-commits.js';

/** What SendMessage asks for, after authentication and agent resolution. */
export interface AcceptInput {
  principal: Principal;
  agent: AgentRecord;
  message: Message;
  deadlineUnixMs?: number;
  traceparent?: string;
  /** A push config given with the message: stored with the task, before any event of it can exist. */
  push?: ValidPushConfig;
  /** A task of a tree (delegation): its place and authority, carried on its commands. */
  tree?: TreeIdentity;
}

/** What a task of a tree carries besides the caller's identity (docs/agents.md, "Delegation"). */
export type TreeIdentity = Required<Pick<Identity, 'rootTaskId'>> & Pick<Identity, 'parentTaskId' | 'act' | 'retryBudget'>;

/**
 * Outcome of accepting a message: the task, and whether nothing new was accepted — a retry of an
 * accepted message (`message_id`) or the same work still running (`same_work`).
 */
export interface AcceptResult {
  task: Task;
  duplicate: false | 'message_id' | 'same_work';
  /** The number of the last stream event `task` includes: what a blocking send waits after. */
  eventSeq: number;
}

class DedupHit extends Error {}

const isOpen = (state: string) => (OPEN_STATE_NAMES as readonly string[]).includes(state);

/** A follow-up turn that would grow its task past DISPATCHER_MAX_TASK_BYTES: refused, nothing stored. */
const taskTooLarge = (taskId: string, taskBytes: number, maxBytes: number) =>
  new RequestMalformedError({
    message: `task ${taskId} would grow to ${taskBytes} bytes with this message; a task may hold at most ${maxBytes}: start a new task`,
    metadata: { reason: 'TASK_TOO_LARGE', taskBytes: String(taskBytes), maxBytes: String(maxBytes) },
  });

const hashMessage = (m: Json) => createHash('sha256').update(canonicalJson(m)).digest('hex');

/** A task the platform failed because its deadline or its turn's start-by time passed (see {@link TaskService.failOverdue}). */
export interface ExpiredTask {
  tenant: string;
  agentId: string;
  task: Task;
  reason: 'DEADLINE_EXCEEDED' | 'NOT_STARTED';
  /** The tasks its end changed (it and the delegated tasks canceled with it), with what each logged. */
  ended: ChangedTask[];
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

export interface TaskServiceOptions {
  /** Told of each task created here, as stored (the projection primes its cache with it). */
  created?: (row: TaskRow, executionId: string) => void;
  /** A new task's id (TaskAffinity: one whose events are projected here); a random UUID by default. */
  newTaskId?: () => string;
  /** A turn no worker started this long after its accept is failed (0, the default: never); see failOverdue. */
  startTimeoutMs?: number;
  /** An agent's record as its task's tenant sees it (the channel of a delegated task canceled with its parent). */
  agentRecord?: (agentId: string, tenant: string) => AgentRecord | undefined;
  /** Most bytes a task's JSON may reach through follow-up turns (DISPATCHER_MAX_TASK_BYTES); unbounded by default. */
  maxTaskBytes?: number;
}

/** A task of a tree that the dispatcher settled (CancelTask, a deadline): its parent may resume. */
export interface SettledChild {
  parentTaskId: string;
  tenant: string;
}

/**
 * Tasks as the API changes and reads them. With TaskProjection it is the only code that writes
 * tasks; every mutation of an existing task runs in a transaction holding the task row lock
 * (SELECT … FOR UPDATE), so there is one writer per task at a time whether the write comes from
 * an API call or from the event stream. Commands are written to the outbox in the same
 * transaction as the task change they belong to. The SQL is TaskRepository's.
 */
export class TaskService {
  private readonly repo: TaskRepository;
  private readonly created?: (row: TaskRow, executionId: string) => void;
  private readonly startTimeoutMs: number;
  private readonly agentRecord: (agentId: string, tenant: string) => AgentRecord | undefined;
  private readonly childSettledListeners: Array<(c: SettledChild) => void> = [];
  private readonly newTaskId: () => string;
  private readonly maxTaskBytes: number;

  constructor(
    ds: DataSource,
    private readonly commands: OutboxCommands,
    opts: TaskServiceOptions = {},
  ) {
    this.repo = new TaskRepository(ds);
    this.maxTaskBytes = opts.maxTaskBytes ?? Number.POSITIVE_INFINITY;
    this.created = opts.created;
    this.startTimeoutMs = opts.startTimeoutMs ?? 0;
    this.agentRecord = opts.agentRecord ?? (() => undefined);
    this.newTaskId = opts.newTaskId ?? newId;
  }

  /** Told, after the commit, of each delegated task this service settled (its parent's wait may be over). */
  onChildSettled(listener: (c: SettledChild) => void): void {
    this.childSettledListeners.push(listener);
  }

  private childSettled(row: TaskRow): void {
    if (!row.parent_task_id) return;
    for (const l of this.childSettledListeners) l({ parentTaskId: row.parent_task_id, tenant: row.tenant });
  }

  /**
   * Accepts a message: dedup on (tenant, agent, messageId) first, then create the task or add
   * a turn to an interrupted one, its execution and its command, all in one transaction.
   */
  async accept(input: AcceptInput): Promise<AcceptResult> {
    try {
      return await this.acceptMessage(input);
    } catch (err) {
      if (!(err instanceof CommandTooLargeError)) throw err;
      // Refused before anything is stored: a command the broker would refuse never reaches the outbox.
      throw new RequestMalformedError({
        message: `message too large for the agent's channel: ${err.message}`,
        metadata: { reason: 'COMMAND_TOO_LARGE', commandBytes: String(err.commandBytes), limitBytes: String(err.limitBytes) },
      });
    }
  }

  private async acceptMessage(input: AcceptInput): Promise<AcceptResult> {
    const { principal, agent } = input;
    const tenant = principal.tenant;
    const incoming = Message.toJSON(input.message) as Json;
    const hash = hashMessage(incoming);
    const messageId = input.message.messageId;
    if (!input.message.taskId) {
      const work = input.message.contextId ? argsHash(incoming.parts) : undefined;
      if (work) {
        const prior = await this.repo.findPriorAnswer(tenant, agent.id, messageId, input.message.contextId, work);
        // A reused id gets the task it was first answered with, even when other work of its kind runs now.
        if (prior.dedup) return this.answerDuplicate(prior.dedup, hash, messageId, tenant, agent.id);
        // Same work (tenant, context, parts) still running: that task, not a second one.
        if (prior.running) return this.answerSameWork(prior.running, hash, messageId, tenant, agent.id);
      }
      const created = await this.acceptNew(input, incoming, hash, work);
      // A new task has logged nothing yet: its first change is event 1.
      if (created) return { task: created, duplicate: false, eventSeq: 0 };
      const winner = await this.repo.findDedup(tenant, agent.id, messageId);
      if (!winner) throw new Error(`dedup row for ${messageId} vanished`);
      return this.answerDuplicate(winner, hash, messageId, tenant, agent.id);
    }
    const known = await this.repo.findDedup(tenant, agent.id, messageId);
    if (known) return this.answerDuplicate(known, hash, messageId, tenant, agent.id);
    try {
      return await this.repo.transaction(async (tx) => {
        // A follow-up turn: everything happens under the task row lock.
        const row = await this.repo.lock(tx, input.message.taskId, tenant, agent.id);
        if (!row) throw new TaskNotFoundError(`Task not found: ${input.message.taskId}`);
        const refusal = followUpRefusal(row, input.message.contextId);
        if (refusal) {
          // A twin that took the lock first has claimed the message by now: a retry, answered as one.
          if (await this.repo.findDedup(tenant, agent.id, messageId, tx)) throw new DedupHit();
          throw refusal;
        }
        const turn = row.turn + 1;
        const message = { ...incoming, taskId: row.id, contextId: row.context_id };
        const task = resubmitted(row.task, message, new Date());
        const taskBytes = Buffer.byteLength(JSON.stringify(task));
        if (taskBytes > this.maxTaskBytes) throw taskTooLarge(row.id, taskBytes, this.maxTaskBytes);
        const deadlineUnixMs = turnDeadline(row.deadline_at, input.deadlineUnixMs);
        const identity = this.identity({ ...input, deadlineUnixMs }, row.id, row.context_id, turn);
        // The dedup claim comes first in the statement: a concurrent twin's makes it write nothing.
        if (!(await this.repo.insertTurn(this.turnRow(input, hash, identity, turn, message, task), tx))) throw new DedupHit();
        // The turn logged its resubmission as the task's next event.
        return { task: Task.fromJSON(task), duplicate: false, eventSeq: Number(row.event_seq ?? 0) + 1 };
      });
    } catch (err) {
      if (!(err instanceof DedupHit)) throw err;
      const winner = await this.repo.findDedup(tenant, agent.id, messageId);
      if (!winner) throw new Error(`dedup row for ${messageId} vanished`, { cause: err });
      return this.answerDuplicate(winner, hash, messageId, tenant, agent.id);
    }
  }

  /**
   * The hot path, a message that starts a task: dedup claim, task, execution, outbox command and
   * the push config given with it in one statement, batched with the concurrent requests' (see
   * TaskRepository.insertTurn). Nothing is written when the dedup claim loses; undefined then.
   */
  private async acceptNew(input: AcceptInput, incoming: Json, hash: string, work?: string): Promise<Task | undefined> {
    const { principal, agent } = input;
    const taskId = this.newTaskId();
    const contextId = input.message.contextId || newId();
    const now = new Date();
    const status = { state: stateName(TaskState.TASK_STATE_SUBMITTED), timestamp: now.toISOString() };
    const message = { ...incoming, taskId, contextId };
    const task: Json = { id: taskId, contextId, status, history: [message] };
    const identity = this.identity(input, taskId, contextId, FIRST_TURN);
    const deadlineAt = input.deadlineUnixMs !== undefined ? new Date(input.deadlineUnixMs) : null;
    const created = await this.repo.insertTurn(
      this.turnRow(input, hash, identity, FIRST_TURN, message, task, {
        workHash: work ?? null,
        deadlineAt: deadlineAt?.toISOString() ?? null,
      }),
    );
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
        deadline_at: deadlineAt,
        start_by_at: identity.startByUnixMs !== undefined ? new Date(identity.startByUnixMs) : null,
      },
      identity.executionId,
    );
    return Task.fromJSON(task);
  }

  /** A turn as the repository writes it: `task` as it reads after the accept, the run command, the push config given. */
  private turnRow(
    input: AcceptInput,
    hash: string,
    identity: Identity,
    turn: number,
    message: Json,
    task: Json,
    first: { workHash: string | null; deadlineAt: string | null } = { workHash: null, deadlineAt: null },
  ): TurnRow {
    const cmd = this.commands.build(input.agent, Envelopes.run(identity, { turn, message }));
    const status = task.status as { state: string; timestamp: string };
    return {
      tenant: identity.tenant,
      agent_id: identity.agentId,
      message_id: identity.messageId,
      content_hash: hash,
      task_id: identity.taskId,
      context_id: identity.contextId,
      turn,
      state: status.state,
      status_timestamp: status.timestamp,
      task,
      execution_id: identity.executionId,
      topic: cmd.topic,
      key: cmd.key,
      headers: cmd.headers,
      value: cmd.value,
      work_hash: first.workHash,
      deadline_at: first.deadlineAt,
      start_by_at: identity.startByUnixMs !== undefined ? new Date(identity.startByUnixMs).toISOString() : null,
      push_id: input.push?.id ?? null,
      push_url: input.push?.url ?? null,
      push_token: input.push?.token ?? null,
      push_auth_scheme: input.push?.authScheme ?? null,
      push_auth_credentials: input.push?.authCredentials ?? null,
      push_wire_version: input.push?.wireVersion ?? null,
    };
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
      // Carried so a delegation can narrow them (docs/agents.md, "Delegation"); tools see them in their token.
      ...(input.principal.scopes.length > 0 ? { scopes: input.principal.scopes } : {}),
      ...(input.deadlineUnixMs !== undefined ? { deadlineUnixMs: input.deadlineUnixMs } : {}),
      // Every turn gets its own start-by time, from its accept.
      ...(this.startTimeoutMs > 0 ? { startByUnixMs: Date.now() + this.startTimeoutMs } : {}),
      ...(input.traceparent ? { traceparent: input.traceparent } : {}),
      ...input.tree,
    };
  }

  /** Runs `work` in a transaction; the task rows it locks (see {@link lock}) stay locked until it ends. */
  transaction<T>(work: (tx: TaskTransaction) => Promise<T>): Promise<T> {
    return this.repo.transaction(work);
  }

  /** Locks a task's row in `tx` (undefined: no such task of the tenant). */
  lock(tx: TaskTransaction, taskId: string, tenant: string): Promise<TaskRow | undefined> {
    return this.repo.lock(tx, taskId, tenant);
  }

  /**
   * Creates a delegated task (`input.tree` set) with its derived id, first turn and command, under
   * `tx`; false when it exists already (a re-run or redelivered parent turn asked for it again).
   */
  async createChild(
    tx: TaskTransaction,
    input: AcceptInput,
    taskId: string,
    contextId: string,
    parent: { taskId: string; agentId: string },
  ): Promise<boolean> {
    const incoming = Message.toJSON(input.message) as Json;
    const status = { state: stateName(TaskState.TASK_STATE_SUBMITTED), timestamp: new Date().toISOString() };
    const message = { ...incoming, taskId, contextId };
    // Its place in the tree, for any A2A client (docs/agents.md, "Delegation").
    const metadata = { 'mesh/parent': parent, 'mesh/root_task_id': input.tree?.rootTaskId };
    const task: Json = { id: taskId, contextId, status, history: [message], metadata };
    const identity = this.identity(input, taskId, contextId, FIRST_TURN);
    const deadlineAt = input.deadlineUnixMs !== undefined ? new Date(input.deadlineUnixMs).toISOString() : null;
    const row = this.turnRow(input, hashMessage(incoming), identity, FIRST_TURN, message, task, { workHash: null, deadlineAt });
    return this.repo.insertTurn(
      { ...row, parent_task_id: input.tree?.parentTaskId ?? null, root_task_id: input.tree?.rootTaskId ?? null },
      tx,
    );
  }

  /**
   * Records a delegating task's children in its metadata (`mesh/children`: task id, agent, step),
   * so any A2A client can walk the tree from the root; under the row lock `tx` holds.
   */
  async recordChildren(
    tx: TaskTransaction,
    row: TaskRow,
    children: Array<{ taskId: string; agentId: string | null; step: number }>,
  ): Promise<void> {
    const metadata = (row.task.metadata as Json | undefined) ?? {};
    const known = (metadata['mesh/children'] as Array<{ taskId: string }> | undefined) ?? [];
    const added = children.filter((c) => !known.some((k) => k.taskId === c.taskId));
    if (added.length === 0) return;
    await this.repo.updateTaskJson(tx, row.id, { ...row.task, metadata: { ...metadata, 'mesh/children': [...known, ...added] } });
  }

  /**
   * Starts the next turn of `row` (locked in `tx`) with `input.message`, as a follow-up message
   * would: a delegating task resuming with its children's outcomes. False when that message
   * started a turn already.
   */
  async resumeTurn(tx: TaskTransaction, row: TaskRow, input: AcceptInput): Promise<boolean> {
    const incoming = Message.toJSON(input.message) as Json;
    const turn = row.turn + 1;
    const message = { ...incoming, taskId: row.id, contextId: row.context_id };
    const task = resumed(row.task, message, new Date());
    const deadlineUnixMs = turnDeadline(row.deadline_at, undefined);
    const identity = this.identity({ ...input, ...(deadlineUnixMs !== undefined ? { deadlineUnixMs } : {}) }, row.id, row.context_id, turn);
    return this.repo.insertTurn(this.turnRow(input, hashMessage(incoming), identity, turn, message, task), tx);
  }

  /**
   * Answers a message with the running task doing the same work, and records its id with that
   * task: a retry after the task ended (canceled, failed) gets the same task, never a new run.
   */
  private async answerSameWork(
    running: { task: Json; turn: number; event_seq: number },
    hash: string,
    messageId: string,
    tenant: string,
    agentId: string,
  ): Promise<AcceptResult> {
    const taskId = running.task.id as string;
    const recorded = await this.repo.recordAnswer({
      tenant,
      agent_id: agentId,
      message_id: messageId,
      content_hash: hash,
      task_id: taskId,
      turn: running.turn,
    });
    if (recorded) return { task: Task.fromJSON(running.task), duplicate: 'same_work', eventSeq: Number(running.event_seq) };
    // A concurrent twin recorded the id first: its answer stands.
    const winner = await this.repo.findDedup(tenant, agentId, messageId);
    if (!winner) throw new Error(`dedup row for ${messageId} vanished`);
    return this.answerDuplicate(winner, hash, messageId, tenant, agentId);
  }

  private async answerDuplicate(
    known: { content_hash: string; task_id: string },
    hash: string,
    messageId: string,
    tenant: string,
    agentId: string,
  ): Promise<AcceptResult> {
    if (known.content_hash !== hash) throw messageIdConflict(messageId);
    const found = await this.repo.load(known.task_id, tenant, agentId);
    if (!found) throw new TaskNotFoundError(`Task not found: ${known.task_id}`);
    return { task: Task.fromJSON(found.task), duplicate: 'message_id', eventSeq: found.eventSeq };
  }

  /** A task as its tenant sees it (undefined for unknown ids and other tenants' tasks). */
  async load(taskId: string, tenant: string, agentId: string): Promise<Task | undefined> {
    const found = await this.repo.load(taskId, tenant, agentId);
    return found ? Task.fromJSON(found.task) : undefined;
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
  ): Promise<{ task: Task; lastSeq: Record<string, number>; eventSeq: number } | undefined> {
    const found = await this.repo.loadWithProgress(taskId, tenant, agentId);
    return found ? { task: Task.fromJSON(found.task), lastSeq: found.lastSeq, eventSeq: found.eventSeq } : undefined;
  }

  /** Up to `limit` logged stream events of a task after number `after` (see TaskRepository.readEvents). */
  readEvents(taskId: string, tenant: string, agentId: string, after: number, limit: number): Promise<TaskEventPage | undefined> {
    return this.repo.readEvents(taskId, tenant, agentId, after, limit);
  }

  /** Newest status first, keyset pagination on (status_timestamp, id). */
  async list(params: ListTasksRequest, tenant: string, agentId: string): Promise<ListTasksResponse> {
    return listResponse(params, await this.repo.list(listQuery(params, tenant, agentId)));
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
    const settled: TaskRow[] = [];
    const expired = await this.repo.transaction(async (tx) => {
      settled.length = 0; // a transaction run again after a lock race starts over
      const rows = await this.repo.lockOverdue(tx, graceMs, limit);
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
        const changed = await this.endTurn(
          tx,
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
        expired.push({ tenant: row.tenant, agentId: row.agent_id, task: changed[0].task!, reason, ended: changed });
        settled.push(row);
      }
      return expired;
    });
    for (const row of settled) this.childSettled(row);
    return expired;
  }

  /**
   * Deletes up to `limit` settled (terminal) tasks unchanged for `retentionMs`, with everything
   * stored for them: executions, message dedup rows (a retry of one of their messages after this
   * starts a new task), push configs and deliveries. Returns how many tasks went.
   */
  async deleteSettled(retentionMs: number, limit: number): Promise<number> {
    return this.repo.deleteSettled(retentionMs, limit);
  }

  /** CancelTask: CANCELED at once (terminal), plus a cancel command so the worker stops. */
  async cancel(
    taskId: string,
    principal: Principal,
    agent: AgentRecord,
    reason?: string,
  ): Promise<{ task: Task; changed: boolean; ended: ChangedTask[] }> {
    let canceled: TaskRow | undefined;
    const result = await this.repo.transaction(async (tx) => {
      canceled = undefined;
      // The task and its tree in one lock order (TaskRepository.lockTree): no deadlock with the projector.
      const tree = await this.repo.lockTree(tx, taskId, principal.tenant, agent.id);
      if (!tree) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      const { row } = tree;
      const state = parseState(row.state)!;
      if (state === TaskState.TASK_STATE_CANCELED) return { task: Task.fromJSON(row.task), changed: false, ended: [] };
      if (isTerminal(state)) throw new TaskNotCancelableError(`Task not cancelable: ${taskId} is ${row.state}`);
      const ended = await this.endTurn(
        tx,
        row,
        { state: TaskState.TASK_STATE_CANCELED, event: 'cancel', by: { subject: principal.subject, actor: principal.actor }, reason },
        agent,
        tree.descendants,
      );
      canceled = row;
      return { task: ended[0].task!, changed: true, ended };
    });
    if (canceled) this.childSettled(canceled);
    return result;
  }

  /**
   * Cancels a delegated task whose parent no longer waits for it (its delegation deadline passed,
   * or `first` was met), under the parent's transaction `tx`; its own descendants with it. Returns
   * the tasks it ended (none: the task had settled already).
   */
  async cancelChild(tx: TaskTransaction, childId: string, tenant: string, why: string): Promise<ChangedTask[]> {
    const row = await this.repo.lock(tx, childId, tenant);
    if (!row || !isOpen(row.state)) return [];
    return this.endTurn(tx, row, this.parentEnded(row, why), this.agentRecord(row.agent_id, row.tenant));
  }

  /**
   * Fails a task tree whose retry budget is spent, under `tx`: its root FAILED with the counts on
   * its status (`metadata["mesh/retry_budget"]`), every live descendant canceled with it. Returns
   * the tasks it ended (none: the root had settled already).
   */
  async failTree(
    tx: TaskTransaction,
    rootTaskId: string,
    tenant: string,
    counts: { budget: number; redeliveries: number; retries: number },
  ): Promise<ChangedTask[]> {
    const row = await this.repo.lock(tx, rootTaskId, tenant);
    if (!row || !isOpen(row.state)) return [];
    return this.failByPlatform(
      tx,
      row,
      `The task tree's retry budget (${counts.budget}) is spent: ${counts.redeliveries} redelivered turns and ` +
        `${counts.retries} tool retries across its tasks; the platform failed it.`,
      { 'mesh/reason': 'RETRY_BUDGET_EXHAUSTED', 'mesh/retry_budget': counts },
      { event: 'retry-budget', reason: 'retry budget spent' },
    );
  }

  /**
   * Fails a delegating task whose children could not be created (no wait was ever recorded for
   * its turn), under `tx`: FAILED with `mesh/reason: DELEGATION_NOT_OPENED`, so a caller sees an
   * end instead of a task WORKING for good. Returns the tasks it ended.
   */
  async failUnopenedDelegation(tx: TaskTransaction, row: TaskRow): Promise<ChangedTask[]> {
    return this.failByPlatform(
      tx,
      row,
      'The agent delegated work, but the platform could not create the tasks it delegated to; ' +
        'the platform failed the task. No delegated task of this turn runs.',
      { 'mesh/reason': 'DELEGATION_NOT_OPENED' },
      { event: 'delegation-not-opened', reason: 'delegation could not be opened' },
    );
  }

  /**
   * Fails the turns whose run commands the broker refuses for good (OutboxRelay), under the relay's
   * claim transaction `tx`: FAILED with `mesh/reason: COMMAND_UNDELIVERABLE` and what the broker
   * said, the tree below canceled with it. A command of a turn that ended meanwhile (or a cancel
   * command: its task has ended already) changes nothing. Returns the tasks ended and their outcomes.
   */
  async failUndeliverable(
    tx: TaskTransaction,
    commands: readonly UndeliverableCommand[],
  ): Promise<{ changed: ChangedTask[]; outcomes: Array<{ tenant: string; agent: string; outcome: string }> }> {
    const changed: ChangedTask[] = [];
    const outcomes: Array<{ tenant: string; agent: string; outcome: string }> = [];
    for (const { command, error } of commands) {
      const h = command.headers;
      if (h[Headers.kind] !== 'task.run' || !h[Headers.taskId] || !h[Headers.tenant]) continue;
      const row = await this.repo.lock(tx, h[Headers.taskId], h[Headers.tenant]);
      if (!row || !isOpen(row.state) || executionId(row.tenant, row.id, row.turn) !== h[Headers.executionId]) continue;
      const ended = await this.failByPlatform(
        tx,
        row,
        `The platform could not deliver this turn to the agent and failed the task: ${error}.`,
        { 'mesh/reason': 'COMMAND_UNDELIVERABLE' },
        { event: 'undeliverable', reason: 'command undeliverable' },
      );
      changed.push(...ended);
      outcomes.push({ tenant: row.tenant, agent: row.agent_id, outcome: 'failed' });
    }
    return { changed, outcomes };
  }

  /**
   * Fails a delegating task whose children's outcomes cannot reach it (its next turn's command
   * would be larger than its channel takes, even without their artifacts), under `tx`.
   */
  async failDelegationResults(tx: TaskTransaction, row: TaskRow, why: string): Promise<ChangedTask[]> {
    return this.failByPlatform(
      tx,
      row,
      `The delegated work settled, but its outcomes cannot be handed to the agent (${why}); the platform failed the task.`,
      { 'mesh/reason': 'DELEGATION_RESULTS_TOO_LARGE' },
      { event: 'delegation-results-too-large', reason: 'delegation results too large' },
    );
  }

  /** Ends `row`'s turn FAILED by the platform itself, `text` and `metadata` its status message. */
  private failByPlatform(
    tx: TaskTransaction,
    row: TaskRow,
    text: string,
    metadata: Json,
    end: { event: string; reason: string },
  ): Promise<ChangedTask[]> {
    const message = { messageId: newId(), role: 'ROLE_AGENT', taskId: row.id, contextId: row.context_id, parts: [{ text }], metadata };
    return this.endTurn(
      tx,
      row,
      { state: TaskState.TASK_STATE_FAILED, message, by: { subject: PLATFORM_PRINCIPAL, actor: PLATFORM_PRINCIPAL }, ...end },
      this.agentRecord(row.agent_id, row.tenant),
    );
  }

  /** How a delegated task ends when the task that delegated it stops waiting for it. */
  private parentEnded(row: TaskRow, why: string): TurnEnd {
    const message = {
      messageId: newId(),
      role: 'ROLE_AGENT',
      taskId: row.id,
      contextId: row.context_id,
      parts: [{ text: `Canceled by the platform: ${why}.` }],
      metadata: { 'mesh/reason': 'DELEGATION_ENDED' },
    };
    return {
      state: TaskState.TASK_STATE_CANCELED,
      message,
      event: 'parent-ended',
      by: { subject: PLATFORM_PRINCIPAL, actor: PLATFORM_PRINCIPAL },
      reason: why,
    };
  }

  /**
   * Ends a task's open turn with a state the dispatcher sets itself (CancelTask, a deadline
   * passing), under the task row lock `tx` holds: the task (with `message` as its status message
   * and last history entry), the turn's execution closed (a late worker event is ignored), the
   * push deliveries of the change (event id `{taskId}:{event}`, with the change itself, as for
   * projected events) and, when the agent's channel is known, a cancel command so a worker still
   * running the turn stops. Returns every task it ended, `row`'s first, each with the event it logged.
   */
  private async endTurn(
    tx: TaskTransaction,
    row: TaskRow,
    end: TurnEnd,
    agent: AgentRecord | undefined,
    locked?: TaskRow[],
  ): Promise<ChangedTask[]> {
    // Cancel cascades: no delegated task outlives the end of the task it works for (docs/agents.md,
    // "Delegation"). Every live descendant is locked first (`locked`: already, with `row`), and the
    // moment they all end at is taken after that: one that settled while its lock was awaited
    // settled before this end.
    const descendants = locked ?? (await this.repo.lockLiveDescendants(tx, row.id, row.tenant));
    const now = new Date();
    const changed = [await this.endOneTurn(tx, row, end, agent, now)];
    for (const child of descendants) {
      changed.push(
        await this.endOneTurn(
          tx,
          child,
          this.parentEnded(child, `the task that delegated it (${row.id}) ended as ${stateName(end.state)}`),
          this.agentRecord(child.agent_id, child.tenant),
          now,
        ),
      );
    }
    return changed;
  }

  /** {@link endTurn} of one task, its descendants left alone. */
  private async endOneTurn(
    tx: TaskTransaction,
    row: TaskRow,
    end: TurnEnd,
    agent: AgentRecord | undefined,
    now: Date,
  ): Promise<ChangedTask> {
    const json = ended(row.task, end.state, now, end.message);
    const task = Task.fromJSON(json);
    const exec = executionId(row.tenant, row.id, row.turn);
    const event = statusChangeEventOf(row.id, row.context_id, task.status!);
    const { messageId, seq } = await this.repo.endTurn(tx, {
      task: row,
      state: stateName(end.state),
      statusTimestamp: now,
      json,
      executionId: exec,
      endedBy: end.event,
      push: { eventId: `${row.id}:${end.event}`, body: event },
    });
    if (agent && messageId !== undefined) {
      const identity: Identity = {
        tenant: row.tenant,
        agentId: row.agent_id,
        taskId: row.id,
        contextId: row.context_id,
        messageId,
        executionId: exec,
        ...end.by,
      };
      await this.repo.enqueue(tx, this.commands.build(agent, Envelopes.cancel(identity, end.reason ? { reason: end.reason } : {})));
    }
    return { taskId: row.id, logged: [{ seq, event }], task };
  }
}
