import { StreamResponse, type Task } from '@a2a-js/sdk';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { TaskEventPage } from './task.repository.js';
import type { LoggedEvent } from './task-projection.js';
import { isSettled } from './task-state.js';

/** Reads up to `limit` logged stream events of a task after number `after` (undefined: no such task for that tenant). */
export type TaskEventReader = (
  taskId: string,
  tenant: string,
  agentId: string,
  after: number,
  limit: number,
) => Promise<TaskEventPage | undefined>;

export interface TaskChangeNotifierOptions {
  /** Re-read interval of a watched task's log: what another replica logged and was not told (TaskCommitFeed down). */
  pollMs: number;
  /** Re-read interval while an eager watcher (a blocking send) is open. */
  eagerPollMs: number;
  /** Most events one read returns (a longer backlog is read page after page). */
  pageSize?: number;
  /** The service's logger (lines carry `src: task-change-notifier`). */
  logger?: Logger;
}

/**
 * What a watcher is handed: the task's next logged events, in number order, and — when the change
 * was committed in this process — the task exactly as that commit left it (no read back).
 */
export type TaskChangeListener = (events: LoggedEvent[], committed?: Task) => void;

/** One watcher's handle on a task's logged events. */
export interface TaskChangeWatcher {
  /** Stops listening; the task's poll stops with its last watcher. Idempotent. */
  close(): void;
}

export interface WatchOptions {
  /**
   * Re-read at the eager interval for as long as this watcher is open: a blocking send expects
   * its answer soon, even while another replica's changes are not told (TaskCommitFeed down).
   */
  eager?: boolean;
  /**
   * `after` is the task's last event as the caller just read or committed it: no catch-up read.
   * A later change committed here that does not follow on reads then, and the poll reads on its
   * interval. A blocking send's wait starts so: one read of the log per send was most of what
   * Postgres spent on it.
   */
  caughtUp?: boolean;
}

/** How a blocking send waits (see {@link TaskChangeNotifier.waitSettled}). */
export interface SettledWait {
  /** When to give up and answer with the task as accepted (epoch ms). */
  deadline: number;
  /** Aborted when the caller leaves: the wait ends at once. */
  closed?: AbortSignal;
  /** Reads the task as stored: the answer when its settled status was logged on another replica. */
  load: () => Promise<Task | undefined>;
}

interface Poll {
  key: string;
  taskId: string;
  tenant: string;
  agentId: string;
  /** Each watcher with the number of the last event handed to it. */
  positions: Map<TaskChangeListener, number>;
  /** Open eager watchers: while there is one, every read is at the eager interval. */
  eager: number;
  timer?: NodeJS.Timeout;
  /** A read is in flight (it schedules the next one itself). */
  reading: boolean;
  /** Read again as soon as the read in flight is done (a gap was seen meanwhile). */
  again: boolean;
}

/**
 * The one place a dispatcher replica learns that a task changed, for every stream and blocking
 * send that waits on one. What they are handed is the task's event log (`task_events`), in number
 * order, each event exactly once per watcher, from where that watcher is:
 * - changes committed in this process (the projector, CancelTask, a deadline, delegation — all
 *   through TaskCommits) are handed over as they commit (`committed`), with the task as committed;
 * - ONE poll per watched task — shared by every watcher of the task, stopped with its last one —
 *   reads what was logged elsewhere: at once when another replica's projection says it changed the
 *   task (`storedElsewhere`, from TaskCommitFeed), else every `pollMs` (a cancel or deadline
 *   there, a notification missed), every `eagerPollMs` while an eager watcher (a blocking send) is open.
 * A run that does not follow on from where a watcher is (it joined late, a local run overtook a
 * remote one), or a local change whose events are not known here, makes the poll read at once, so
 * numbers are never skipped. Polls are keyed by tenant, agent and task id: a poll reads only
 * within the tenant that asked; what another replica says (a task id) only makes it read sooner.
 */
export class TaskChangeNotifier {
  private readonly polls = new Map<string, Poll>();
  /** Polls of each task id (any tenant), for local commits keyed by task id. */
  private readonly pollsOf = new Map<string, Set<Poll>>();
  private readonly log: Logger;
  private readonly pageSize: number;

  constructor(
    private readonly read: TaskEventReader,
    private readonly opts: TaskChangeNotifierOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'task-change-notifier' });
    this.pageSize = opts.pageSize ?? 500;
  }

  /** Another replica committed a change of the task: its polls here (any tenant) read now. */
  storedElsewhere(taskId: string): void {
    for (const poll of [...(this.pollsOf.get(taskId) ?? [])]) this.readSoon(poll);
  }

  /** Changes stored elsewhere may have gone untold: every poll reads now. */
  readAll(): void {
    for (const poll of [...this.polls.values()]) this.readSoon(poll);
  }

  /**
   * A change of the task committed in this process: its logged events (numbered, in order) and
   * the task as committed are handed to the task's watchers at once. Without `logged` (the
   * committer does not know what it logged) the task's poll reads now.
   */
  committed(taskId: string, logged?: readonly LoggedEvent[], task?: Task): void {
    for (const poll of [...(this.pollsOf.get(taskId) ?? [])]) {
      if (!logged || logged.length === 0 || this.deliver(poll, logged, task).gap) this.readSoon(poll);
    }
  }

  /** Calls `listener` with the task's events numbered above `after`, in order, until `close`. */
  watch(
    taskId: string,
    tenant: string,
    agentId: string,
    after: number,
    listener: TaskChangeListener,
    opts: WatchOptions = {},
  ): TaskChangeWatcher {
    const key = `${tenant}\u0000${agentId}\u0000${taskId}`;
    let poll = this.polls.get(key);
    const started = poll === undefined;
    if (!poll) {
      poll = {
        key,
        taskId,
        tenant,
        agentId,
        positions: new Map(),
        eager: 0,
        reading: false,
        again: false,
      };
      this.polls.set(key, poll);
      let set = this.pollsOf.get(taskId);
      if (!set) this.pollsOf.set(taskId, (set = new Set()));
      set.add(poll);
    }
    const own = poll;
    // Wrapped, so one listener function given twice still counts as two watchers.
    const entry: TaskChangeListener = (events, committed) => listener(events, committed);
    own.positions.set(entry, after);
    if (opts.eager) own.eager += 1;
    // Whatever was logged between the caller's read and now reaches it without waiting for the poll.
    // A caught-up watcher of a task polled already waits for that poll's next read.
    if (!opts.caughtUp) this.readSoon(own);
    else if (started) this.schedule(own);
    let closed = false;
    return {
      close: () => {
        if (closed) return;
        closed = true;
        own.positions.delete(entry);
        if (opts.eager) own.eager -= 1;
        if (own.positions.size > 0 || this.polls.get(key) !== own) return;
        clearTimeout(own.timer);
        this.polls.delete(key);
        const set = this.pollsOf.get(taskId);
        set?.delete(own);
        if (set?.size === 0) this.pollsOf.delete(taskId);
      },
    };
  }

  /**
   * A blocking send's wait: follows the task's log after `after` (where its accept left it) until
   * a settled status (terminal or interrupted), the deadline or the caller leaving; never throws.
   * It answers with the task as committed when the settling change was committed here, else with
   * the task read once (`load`); at the deadline, or if that read fails, with `task` as it was: a
   * handle, never an error. Its watcher is eager: the poll reads at the eager interval meanwhile.
   */
  async waitSettled(task: Task, tenant: string, agentId: string, after: number, wait: SettledWait): Promise<Task> {
    if (task.status && isSettled(task.status.state)) return task;
    const { closed } = wait;
    if (closed?.aborted) return task;
    let watcher: TaskChangeWatcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    let onClosed: (() => void) | undefined;
    try {
      return await new Promise<Task>((resolve) => {
        let settling = false;
        const onEvents: TaskChangeListener = (events, committed) => {
          if (settling || !events.some(settles)) return;
          settling = true;
          if (committed?.status && isSettled(committed.status.state)) return resolve(committed);
          wait.load().then(
            (stored) => resolve(stored ?? task),
            (err: unknown) => {
              this.log.warn(
                { taskId: task.id, err: String(err) },
                'reading a settled task failed; the blocking send answers with it as accepted',
              );
              resolve(task);
            },
          );
        };
        watcher = this.watch(task.id, tenant, agentId, after, onEvents, { eager: true, caughtUp: true });
        timer = setTimeout(() => resolve(task), Math.max(0, wait.deadline - Date.now()));
        // The answer goes nowhere once the caller left: stop waiting (and polling) at once.
        onClosed = () => resolve(task);
        closed?.addEventListener('abort', onClosed);
      });
    } finally {
      clearTimeout(timer);
      if (onClosed) closed?.removeEventListener('abort', onClosed);
      watcher?.close();
    }
  }

  /** Tasks polled now (one per watched task and tenant, whatever the number of its watchers). */
  get polled(): number {
    return this.polls.size;
  }

  /** Hands each watcher what follows on from its position: whether some watcher saw a gap, some got events. */
  private deliver(poll: Poll, events: readonly LoggedEvent[], committed?: Task): { gap: boolean; delivered: boolean } {
    let gap = false;
    let delivered = false;
    for (const [w, pos] of [...poll.positions]) {
      if (!poll.positions.has(w)) continue; // closed by an earlier watcher's listener
      const fresh: LoggedEvent[] = [];
      for (const e of events) {
        if (e.seq <= pos + fresh.length) continue;
        if (e.seq !== pos + fresh.length + 1) {
          gap = true;
          break;
        }
        fresh.push(e);
      }
      if (fresh.length === 0) continue;
      poll.positions.set(w, fresh[fresh.length - 1].seq);
      delivered = true;
      // The committed task is the state after the whole run: only a watcher handed its end gets it.
      w(fresh, fresh[fresh.length - 1] === events[events.length - 1] ? committed : undefined);
    }
    return { gap, delivered };
  }

  private readSoon(poll: Poll): void {
    if (this.polls.get(poll.key) !== poll) return;
    if (poll.reading) {
      poll.again = true;
      return;
    }
    clearTimeout(poll.timer);
    this.schedule(poll, 0);
  }

  private schedule(poll: Poll, delay?: number): void {
    const ms = delay ?? (poll.eager > 0 ? this.opts.eagerPollMs : this.opts.pollMs);
    const { key, taskId, tenant, agentId } = poll;
    poll.timer = setTimeout(() => {
      poll.reading = true;
      poll.again = false;
      const after = Math.min(...poll.positions.values());
      void this.read(taskId, tenant, agentId, after, this.pageSize).then(
        (page) => {
          poll.reading = false;
          if (this.polls.get(key) !== poll) return; // its last watcher left while reading
          const events = page?.events ?? [];
          this.deliver(poll, events);
          // A full page: more are waiting. A gap reported while reading: look again now.
          const more = events.length >= this.pageSize || poll.again;
          this.schedule(poll, more ? 0 : undefined);
        },
        (err: unknown) => {
          poll.reading = false;
          this.log.warn({ taskId, err: String(err) }, 'reading a watched task failed; retrying at the next poll');
          if (this.polls.get(key) === poll) this.schedule(poll);
        },
      );
    }, ms);
    poll.timer.unref();
  }
}

/** Whether a logged event is a settled status (terminal or interrupted). */
function settles(logged: LoggedEvent): boolean {
  const payload = StreamResponse.fromJSON(logged.event).payload;
  return payload?.$case === 'statusUpdate' && payload.value.status !== undefined && isSettled(payload.value.status.state);
}
