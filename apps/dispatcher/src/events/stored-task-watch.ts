import type { Task } from '@a2a-js/sdk';
import { silentLogger, type Logger } from '@mesh/telemetry';

/** Reads a task as stored, scoped to its tenant and agent (undefined: not there). */
export type StoredTaskReader = (taskId: string, tenant: string, agentId: string) => Promise<Task | undefined>;

/** Where commits made by this process are announced (TaskEventBusManager.onCommitted). */
export interface LocalCommits {
  onCommitted(taskId: string, listener: (task: Task) => void): () => void;
}

export interface StoredTaskWatchOptions {
  /** Re-read interval of a watched task (covers changes committed by another replica). */
  pollMs: number;
  /** Re-read interval once a watcher expects the task to settle soon (a settling event was seen). */
  hurriedPollMs: number;
  /** The service's logger (lines carry `src: stored-task-watch`). */
  logger?: Logger;
}

/** One watcher's handle on a task's stored changes. */
export interface StoredTaskWatcher {
  /** A settling event was seen: re-read at the hurried interval until the store has it. */
  hurry(): void;
  /** Stops listening; the task's poll stops with its last watcher. Idempotent. */
  close(): void;
}

interface Poll {
  /**
   * Each watcher with the status last handed to it: a re-read that finds the same one is not
   * repeated, and a watcher that joins late still gets the stored task at the next read (a change
   * the others saw before it joined would otherwise never reach it).
   */
  listeners: Map<(task: Task) => void, string | undefined>;
  timer?: NodeJS.Timeout;
  hurried: boolean;
  /** A read is in flight (it schedules the next one itself). */
  reading: boolean;
  offCommitted: () => void;
}

/**
 * Stored changes of the tasks that streams follow on this replica, so a stream waits on events
 * and never reads Postgres on its own: commits made here are handed over as they happen
 * (`onCommitted`), and ONE poll per followed task — shared by every stream of the task, stopped
 * with its last one — catches what was committed elsewhere (another replica's projector or
 * CancelTask, a deadline swept there). Keyed by tenant, agent and task id: a poll reads only
 * within the tenant that asked. Local commits are keyed by task id alone, so a caller watches a
 * task only after reading it within its own tenant (a stream does so after its snapshot).
 */
export class StoredTaskWatch {
  private readonly polls = new Map<string, Poll>();
  private readonly log: Logger;

  constructor(
    private readonly read: StoredTaskReader,
    private readonly local: LocalCommits,
    private readonly opts: StoredTaskWatchOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'stored-task-watch' });
  }

  /** Calls `listener` with each stored change of the task (as committed) until `close`. */
  watch(taskId: string, tenant: string, agentId: string, listener: (task: Task) => void): StoredTaskWatcher {
    const key = `${tenant}\u0000${agentId}\u0000${taskId}`;
    let poll = this.polls.get(key);
    if (!poll) {
      const created: Poll = { listeners: new Map(), hurried: false, reading: false, offCommitted: () => undefined };
      created.offCommitted = this.local.onCommitted(taskId, (task) => this.deliver(created, task));
      this.polls.set(key, created);
      this.schedule(key, created, taskId, tenant, agentId);
      poll = created;
    }
    const own = poll;
    // Wrapped, so one listener function given twice still counts as two watchers.
    const entry = (task: Task) => listener(task);
    own.listeners.set(entry, undefined);
    let closed = false;
    return {
      hurry: () => {
        if (closed || own.hurried) return;
        own.hurried = true;
        if (own.reading) return; // the read in flight schedules the next one, hurried
        clearTimeout(own.timer);
        this.schedule(key, own, taskId, tenant, agentId);
      },
      close: () => {
        if (closed) return;
        closed = true;
        own.listeners.delete(entry);
        if (own.listeners.size > 0 || this.polls.get(key) !== own) return;
        clearTimeout(own.timer);
        own.offCommitted();
        this.polls.delete(key);
      },
    };
  }

  /** Tasks polled now (one per followed task, whatever the number of its streams). */
  get polled(): number {
    return this.polls.size;
  }

  private deliver(poll: Poll, task: Task): void {
    const status = JSON.stringify(task.status ?? null);
    for (const [l, last] of [...poll.listeners]) {
      if (last === status || !poll.listeners.has(l)) continue;
      poll.listeners.set(l, status);
      l(task);
    }
  }

  private schedule(key: string, poll: Poll, taskId: string, tenant: string, agentId: string): void {
    const ms = poll.hurried ? this.opts.hurriedPollMs : this.opts.pollMs;
    poll.timer = setTimeout(() => {
      poll.reading = true;
      void this.read(taskId, tenant, agentId).then(
        (task) => {
          poll.reading = false;
          if (this.polls.get(key) !== poll) return; // its last watcher left while reading
          if (task) this.deliver(poll, task);
          this.schedule(key, poll, taskId, tenant, agentId);
        },
        (err: unknown) => {
          poll.reading = false;
          this.log.warn({ taskId, err: String(err) }, 'reading a followed task failed; retrying at the next poll');
          if (this.polls.get(key) === poll) this.schedule(key, poll, taskId, tenant, agentId);
        },
      );
    }, ms);
    poll.timer.unref();
  }
}
