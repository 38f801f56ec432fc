import { Task, TaskState } from '@a2a-js/sdk';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { Envelopes, executionId, Headers, newId, type AgentRecord, type Identity } from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import type { OutboxCommands } from '../outbox/outbox-command.js';
import type { UndeliverableCommand } from '../outbox/outbox.relay.js';
import type { Json, TaskRepository, TaskRow, TaskTransaction } from './task.repository.js';
import { statusChangeEventOf } from './stream-updates.js';
import { isTerminal, OPEN_STATE_NAMES, parseState, stateName } from './task-state.js';
import { ended } from './task-turn.js';
import type { ChangedTask } from './task-commits.js';

const isOpen = (state: string) => (OPEN_STATE_NAMES as readonly string[]).includes(state);

/** A task the platform failed because its deadline or its turn's start-by time passed (see {@link TaskEndings.failOverdue}). */
export interface ExpiredTask {
  tenant: string;
  agentId: string;
  task: Task;
  reason: 'DEADLINE_EXCEEDED' | 'NOT_STARTED';
  /** The tasks its end changed (it and the delegated tasks canceled with it), with what each logged. */
  ended: ChangedTask[];
}

/** How {@link TaskEndings.endTurn} ends a turn. */
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

/** A task of a tree that the dispatcher settled (CancelTask, a deadline): its parent may resume. */
export interface SettledChild {
  parentTaskId: string;
  tenant: string;
}

/**
 * The ends of tasks the dispatcher decides itself — CancelTask, a deadline or start-by time
 * passing, a tree's spent budget or unopened delegation, an undeliverable command — each under the
 * row locks of the task and its live descendants (TaskRepository.lockTree / lockLiveDescendants:
 * one lock order), the tree canceled with it at one moment taken once every lock is held.
 * Commands (cancels) go to the outbox in the same transaction.
 */
export class TaskEndings {
  private readonly childSettledListeners: Array<(c: SettledChild) => void> = [];

  constructor(
    private readonly repo: TaskRepository,
    private readonly commands: OutboxCommands,
    /** An agent's record as its task's tenant sees it (the channel of a delegated task canceled with its parent). */
    private readonly agentRecord: (agentId: string, tenant: string) => AgentRecord | undefined = () => undefined,
  ) {}

  /** Told, after the commit, of each delegated task this service settled (its parent's wait may be over). */
  onChildSettled(listener: (c: SettledChild) => void): void {
    this.childSettledListeners.push(listener);
  }

  private childSettled(row: TaskRow): void {
    if (!row.parent_task_id) return;
    for (const l of this.childSettledListeners) l({ parentTaskId: row.parent_task_id, tenant: row.tenant });
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
