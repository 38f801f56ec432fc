import type { TurnUsage } from '@mesh/contract';
import type { TaskRepository, TaskTransaction, TreeSpending } from '../tasks/task.repository.js';

/**
 * One retry budget per task tree (docs/agents.md, "Delegation"): every task of a tree charges its
 * turn takeovers and tool retries to its root's budget, each execution once; the charge that first
 * takes the tree past it says so, and the tree fails then.
 */
export class TreeBudget {
  constructor(
    private readonly repo: TaskRepository,
    /** Retries a tree may spend across its hops (DISPATCHER_TREE_RETRY_BUDGET). */
    private readonly budget: number,
  ) {}

  /** Gives a tree its budget, once (at its first delegation). */
  open(tx: TaskTransaction, rootTaskId: string, tenant: string): Promise<void> {
    return this.repo.ensureTree(tx, rootTaskId, tenant, this.budget);
  }

  /**
   * Records what an execution used (once per execution id) and returns what its tree has left;
   * `exhausted` is true for the one charge that first took the tree past its budget.
   */
  async charge(
    tx: TaskTransaction,
    rootTaskId: string,
    executionId: string,
    usage: TurnUsage | undefined,
  ): Promise<{ left: number; exhausted: boolean }> {
    if (usage && (usage.attempt > 1 || usage.retries > 0))
      await this.repo.recordUsage(tx, executionId, rootTaskId, usage.attempt - 1, usage.retries);
    const spent = await this.spent(tx, rootTaskId);
    if (spent.left >= 0) return { left: spent.left, exhausted: false };
    return { left: spent.left, exhausted: await this.repo.markTreeExhausted(tx, rootTaskId) };
  }

  /** The tree's budget, what its executions used, and what is left (a tree with no budget row yet: all of it). */
  async spent(tx: TaskTransaction, rootTaskId: string): Promise<TreeSpending> {
    return (await this.repo.treeSpending(tx, rootTaskId)) ?? { budget: this.budget, redeliveries: 0, retries: 0, left: this.budget };
  }
}
