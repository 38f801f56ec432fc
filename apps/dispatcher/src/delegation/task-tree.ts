import { Message, TaskState } from '@a2a-js/sdk';
import { FIRST_TURN } from '@mesh/contract';
import type { Json, TaskRepository, TaskRow, TaskTransaction } from '../tasks/task.repository.js';
import { stateName } from '../tasks/task-state.js';
import { resumed, turnDeadline } from '../tasks/task-turn.js';
import { hashMessage, type AcceptInput, type TurnRows } from '../tasks/turn-rows.js';

/**
 * The turns a tree adds to its tasks, under the parent's row lock: a delegated child created with
 * its derived id and first turn, the children listed on the parent (`mesh/children`), the parent
 * resumed with their outcomes. Their run commands are bounded like any other (CommandTooLargeError).
 */
export class TaskTree {
  constructor(
    private readonly repo: TaskRepository,
    private readonly turns: TurnRows,
  ) {}

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
    const identity = this.turns.identity(input, taskId, contextId, FIRST_TURN);
    const deadlineAt = input.deadlineUnixMs !== undefined ? new Date(input.deadlineUnixMs).toISOString() : null;
    const row = this.turns.row(input, hashMessage(incoming), identity, FIRST_TURN, message, task, { workHash: null, deadlineAt });
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
    const identity = this.turns.identity(
      { ...input, ...(deadlineUnixMs !== undefined ? { deadlineUnixMs } : {}) },
      row.id,
      row.context_id,
      turn,
    );
    return this.repo.insertTurn(this.turns.row(input, hashMessage(incoming), identity, turn, message, task), tx);
  }
}
