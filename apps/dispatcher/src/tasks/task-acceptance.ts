import { Message, Task, TaskState } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { argsHash, FIRST_TURN, newId } from '@mesh/contract';
import { CommandTooLargeError } from '../outbox/outbox-command.js';
import { messageIdConflict } from './task.errors.js';
import type { Json, TaskRepository, TaskRow } from './task.repository.js';
import { stateName } from './task-state.js';
import { followUpRefusal, resubmitted, turnDeadline } from './task-turn.js';
import { hashMessage, type AcceptInput, type TurnRows } from './turn-rows.js';

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

export interface TaskAcceptanceOptions {
  /** Told of each task created here, as stored (the projection primes its cache with it). */
  created?: (row: TaskRow, executionId: string) => void;
  /** A new task's id (TaskAffinity: one whose events are projected here); a random UUID by default. */
  newTaskId?: () => string;
  /** Most bytes a task's JSON may reach through follow-up turns (DISPATCHER_MAX_TASK_BYTES); unbounded by default. */
  maxTaskBytes?: number;
}

class DedupHit extends Error {}

/** A follow-up turn that would grow its task past DISPATCHER_MAX_TASK_BYTES: refused, nothing stored. */
const taskTooLarge = (taskId: string, taskBytes: number, maxBytes: number) =>
  new RequestMalformedError({
    message: `task ${taskId} would grow to ${taskBytes} bytes with this message; a task may hold at most ${maxBytes}: start a new task`,
    metadata: { reason: 'TASK_TOO_LARGE', taskBytes: String(taskBytes), maxBytes: String(maxBytes) },
  });

/**
 * SendMessage as the task store takes it: dedup on (tenant, agent, messageId) and on the same
 * work still running, then a new task or the next turn of an interrupted one, with its execution
 * and run command in one statement. A message whose command its agent's topic would refuse, or
 * a turn that would grow its task past the bound, is refused before anything is stored.
 */
export class TaskAcceptance {
  private readonly created?: (row: TaskRow, executionId: string) => void;
  private readonly newTaskId: () => string;
  private readonly maxTaskBytes: number;

  constructor(
    private readonly repo: TaskRepository,
    private readonly turns: TurnRows,
    opts: TaskAcceptanceOptions = {},
  ) {
    this.created = opts.created;
    this.newTaskId = opts.newTaskId ?? newId;
    this.maxTaskBytes = opts.maxTaskBytes ?? Number.POSITIVE_INFINITY;
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
        const identity = this.turns.identity({ ...input, deadlineUnixMs }, row.id, row.context_id, turn);
        // The dedup claim comes first in the statement: a concurrent twin's makes it write nothing.
        if (!(await this.repo.insertTurn(this.turns.row(input, hash, identity, turn, message, task), tx))) throw new DedupHit();
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
    const identity = this.turns.identity(input, taskId, contextId, FIRST_TURN);
    const deadlineAt = input.deadlineUnixMs !== undefined ? new Date(input.deadlineUnixMs) : null;
    const created = await this.repo.insertTurn(
      this.turns.row(input, hash, identity, FIRST_TURN, message, task, {
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
}
