import { silentLogger, type Logger } from '@mesh/telemetry';
import type { TaskEventPage } from '../tasks/task.repository.js';
import type { LoggedEvent } from '../tasks/task-projection.js';

/** Reads up to `limit` logged stream events of a task after number `after` (undefined: no such task for that tenant). */
export type TaskEventReader = (
  taskId: string,
  tenant: string,
  agentId: string,
  after: number,
  limit: number,
) => Promise<TaskEventPage | undefined>;

/** Where events logged by this process's projector are announced (TaskEventBusManager.onLogged). */
export interface LocalEventLog {
  onLogged(taskId: string, listener: (events: readonly LoggedEvent[]) => void): () => void;
}

export interface TaskEventWatchOptions {
  /** Re-read interval of a watched task's log (covers events logged by another replica). */
  pollMs: number;
  /** Re-read interval while events of the task are on their way (the fan-out saw them on the topic). */
  hurriedPollMs: number;
  /** How long a `hurry` keeps the hurried interval (the events may never be logged: a duplicate). */
  hurryMs: number;
  /** Most events one read returns (a longer backlog is read page after page). */
  pageSize?: number;
  /** The service's logger (lines carry `src: task-event-watch`). */
  logger?: Logger;
}

/** One watcher's handle on a task's logged events. */
export interface TaskEventWatcher {
  /** Events of the task are on their way (seen on the topic): re-read at the hurried interval for a while. */
  hurry(): void;
  /** Stops listening; the task's poll stops with its last watcher. Idempotent. */
  close(): void;
}

interface Poll {
  /** Each watcher with the number of the last event handed to it. */
  positions: Map<(events: LoggedEvent[]) => void, number>;
  timer?: NodeJS.Timeout;
  hurriedUntil: number;
  /**
   * Hurried reads in a row that found nothing new. At two, hurrying stops until a read finds
   * something: the task's events are logged here (handed over as committed), or not at all.
   */
  idleHurries: number;
  /** A read is in flight (it schedules the next one itself). */
  reading: boolean;
  /** Read again as soon as the read in flight is done (a gap was seen meanwhile). */
  again: boolean;
  offLogged: () => void;
}

/**
 * The logged stream events of the tasks that streams follow on this replica, handed to each
 * stream in number order, each exactly once, from where that stream is: events logged by this
 * process's projector as they are committed (`onLogged`), and ONE poll per followed task — shared
 * by every stream of the task, stopped with its last one — for those logged elsewhere (another
 * replica's projector, a cancel or deadline there). A run that does not follow on from where a
 * stream is (it joined late, a local run overtook a remote one) makes the poll read at once, so
 * numbers are never skipped. Keyed by tenant, agent and task id: a poll reads only within the
 * tenant that asked.
 */
export class TaskEventWatch {
  private readonly polls = new Map<string, Poll>();
  private readonly log: Logger;
  private readonly pageSize: number;

  constructor(
    private readonly read: TaskEventReader,
    private readonly local: LocalEventLog,
    private readonly opts: TaskEventWatchOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'task-event-watch' });
    this.pageSize = opts.pageSize ?? 500;
  }

  /** Calls `listener` with the task's events numbered above `after`, in order, until `close`. */
  watch(taskId: string, tenant: string, agentId: string, after: number, listener: (events: LoggedEvent[]) => void): TaskEventWatcher {
    const key = `${tenant}\u0000${agentId}\u0000${taskId}`;
    let poll = this.polls.get(key);
    if (!poll) {
      const created: Poll = {
        positions: new Map(),
        hurriedUntil: 0,
        idleHurries: 0,
        reading: false,
        again: false,
        offLogged: () => undefined,
      };
      created.offLogged = this.local.onLogged(taskId, (events) => {
        if (this.deliver(created, events).gap) this.readSoon(key, created, taskId, tenant, agentId);
      });
      this.polls.set(key, created);
      poll = created;
    }
    const own = poll;
    // Wrapped, so one listener function given twice still counts as two watchers.
    const entry = (events: LoggedEvent[]) => listener(events);
    own.positions.set(entry, after);
    // Whatever was logged between the caller's read and now reaches it without waiting for the poll.
    this.readSoon(key, own, taskId, tenant, agentId);
    let closed = false;
    return {
      hurry: () => {
        if (closed || own.idleHurries >= 2) return;
        const wasHurried = Date.now() < own.hurriedUntil;
        own.hurriedUntil = Date.now() + this.opts.hurryMs;
        if (wasHurried || own.reading) return; // the read in flight schedules the next one, hurried
        clearTimeout(own.timer);
        this.schedule(key, own, taskId, tenant, agentId);
      },
      close: () => {
        if (closed) return;
        closed = true;
        own.positions.delete(entry);
        if (own.positions.size > 0 || this.polls.get(key) !== own) return;
        clearTimeout(own.timer);
        own.offLogged();
        this.polls.delete(key);
      },
    };
  }

  /** Tasks polled now (one per followed task, whatever the number of its streams). */
  get polled(): number {
    return this.polls.size;
  }

  /** Hands each watcher what follows on from its position: whether some watcher saw a gap, some got events. */
  private deliver(poll: Poll, events: readonly LoggedEvent[]): { gap: boolean; delivered: boolean } {
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
      w(fresh);
    }
    return { gap, delivered };
  }

  private readSoon(key: string, poll: Poll, taskId: string, tenant: string, agentId: string): void {
    if (poll.reading) {
      poll.again = true;
      return;
    }
    clearTimeout(poll.timer);
    this.schedule(key, poll, taskId, tenant, agentId, 0);
  }

  private schedule(key: string, poll: Poll, taskId: string, tenant: string, agentId: string, delay?: number): void {
    const ms = delay ?? (Date.now() < poll.hurriedUntil ? this.opts.hurriedPollMs : this.opts.pollMs);
    poll.timer = setTimeout(() => {
      poll.reading = true;
      poll.again = false;
      const after = Math.min(...poll.positions.values());
      void this.read(taskId, tenant, agentId, after, this.pageSize).then(
        (page) => {
          poll.reading = false;
          if (this.polls.get(key) !== poll) return; // its last watcher left while reading
          const events = page?.events ?? [];
          const hurried = Date.now() < poll.hurriedUntil;
          if (this.deliver(poll, events).delivered) poll.idleHurries = 0;
          else if (hurried && ++poll.idleHurries >= 2) poll.hurriedUntil = 0;
          // A full page: more are waiting. A gap reported while reading: look again now.
          const more = events.length >= this.pageSize || poll.again;
          this.schedule(key, poll, taskId, tenant, agentId, more ? 0 : undefined);
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
