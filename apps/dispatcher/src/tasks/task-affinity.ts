import { newId } from '@mesh/contract';
import { partitionOfKey } from '@mesh/bus';

/** Tries for an id of a partition read here before any id will do (two replicas: about 1 in 10^19 runs out). */
const MAX_TRIES = 64;

/**
 * New task ids whose events this replica projects. The agents key a task's events by its id, so
 * the id decides the events partition (Kafka's default partitioning), and the partition decides
 * which replica's projector reads them. An id drawn until it lands on a partition assigned here
 * keeps a task's accept, projection and waiters in one process: the projection finds the task it
 * created in its cache instead of reading it, and a blocking send is handed its answer as it
 * commits instead of being told by another replica. Ids stay random UUIDs. After a rebalance some
 * tasks are projected elsewhere, as without affinity: nothing depends on it but cost.
 */
export class TaskAffinity {
  private local: ReadonlySet<number> = new Set();
  private total = 0;

  /** The events topic's partition count. */
  partitions(total: number): void {
    this.total = total;
  }

  /** The events partitions this replica's projector was assigned (at each rebalance; none after it left). */
  assigned(partitions: readonly number[]): void {
    this.local = new Set(partitions);
  }

  /** A fresh task id: of a partition projected here when that is known and not every partition, else any. */
  newTaskId(): string {
    if (this.local.size === 0 || this.total === 0 || this.local.size >= this.total) return newId();
    for (let i = 0; i < MAX_TRIES; i++) {
      const id = newId();
      if (this.local.has(partitionOfKey(id, this.total))) return id;
    }
    return newId();
  }
}
