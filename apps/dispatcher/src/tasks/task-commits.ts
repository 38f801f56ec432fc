import type { Task } from '@a2a-js/sdk';
import type { MeshMetrics } from '@mesh/telemetry';
import type { LoggedEvent } from './task-projection.js';

/** A task a commit changed: the stream events it logged and the task as committed, when the committer has them. */
export interface ChangedTask {
  taskId: string;
  logged?: readonly LoggedEvent[];
  task?: Task;
}

/** A committed change of tasks, as the code that committed it knows it. */
export interface TaskCommit {
  /** Commands were written to the outbox with it. */
  commands?: boolean;
  /** Push deliveries were recorded with it. */
  deliveries?: boolean;
  /** The tasks it changed (their watchers here are handed the change, the other replicas told). */
  changed?: readonly ChangedTask[];
  /**
   * The other replicas need not be told: the committing statement told them (the projection), or
   * nobody could watch the changed tasks yet (a new task).
   */
  told?: boolean;
  /** Turns it settled or accepted, counted in `mesh_tasks_total`. */
  outcomes?: ReadonlyArray<{ tenant: string; agent: string; outcome: string }>;
}

/** What wakes after a commit: the outbox relay, the push sender, the watchers of the changed tasks. */
export interface CommitListeners {
  relay: { kick(): void };
  push: { kick(): void };
  changes: { committed(taskId: string, logged?: readonly LoggedEvent[], task?: Task): void };
  /** Tells the other replicas which tasks changed (TaskCommitTeller). */
  elsewhere?: { tell(taskIds: Iterable<string>): void };
  metrics?: Pick<MeshMetrics, 'tasks'>;
}

/**
 * The one post-commit hook of every path that commits a task change (the projector, accepts,
 * CancelTask, deadlines, delegation): whatever the commit stored for later — commands, push
 * deliveries, stream events — is woken here, the other replicas are told which tasks changed
 * (unless the statement told them), and the turns it settled are counted, so no path
 * forgets one of them. Called after the transaction committed, never inside it.
 */
export class TaskCommits {
  constructor(private readonly listeners: CommitListeners) {}

  committed(commit: TaskCommit): void {
    if (commit.commands) this.listeners.relay.kick();
    if (commit.deliveries) this.listeners.push.kick();
    for (const c of commit.changed ?? []) this.listeners.changes.committed(c.taskId, c.logged, c.task);
    if (!commit.told && commit.changed?.length) this.listeners.elsewhere?.tell(commit.changed.map((c) => c.taskId));
    for (const o of commit.outcomes ?? []) this.listeners.metrics?.tasks.inc(o);
  }
}
