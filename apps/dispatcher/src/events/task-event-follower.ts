import { StreamResponse, TaskState, type Task } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { wakeableSleep } from '@mesh/contract';
import { isSettled, isTerminal, parseState } from '../tasks/task-state.js';
import type { TaskEventPage } from '../tasks/task.repository.js';
import type { LoggedEvent } from '../tasks/task-projection.js';
import type { TaskChangeNotifier, TaskChangeWatcher } from '../tasks/task-change-notifier.js';

/** The task store's reads a follower makes (TaskReads has them). */
export interface TaskEventLog {
  /** The task as stored and the number of the last event it includes (undefined: not the tenant's and agent's). */
  loadWithProgress(taskId: string, tenant: string, agentId: string): Promise<{ task: Task; eventSeq: number } | undefined>;
  /** The task's state, its last and oldest event numbers, and up to `limit` events after `after`. */
  readEvents(taskId: string, tenant: string, agentId: string, after: number, limit: number): Promise<TaskEventPage | undefined>;
}

/** The task a stream follows, within the caller's tenant and the agent asked. */
export interface FollowedTask {
  taskId: string;
  tenant: string;
  agentId: string;
}

export interface FollowOptions {
  /** The caller's Last-Event-ID: the stream resumes after that event (undefined: a new stream). */
  resumeAfter?: number;
  /** Aborted when the caller leaves: the stream ends at once and releases its watch. */
  closed?: AbortSignal;
  /** How the Task that opens a new stream is shown (the request's historyLength). */
  shown?: (task: Task) => Task;
}

/** One event of a stream: its number in the task's log (the SSE id) and what the caller is sent. */
export interface FollowedEvent {
  seq: number;
  response: StreamResponse;
}

/** A stream whose start was checked; iterate it once. */
export interface TaskEventStream extends AsyncIterable<FollowedEvent> {
  /**
   * No snapshot comes first: a resumed stream's first event comes through the watch and may be
   * far off (the caller should get the response's headers now).
   */
  readonly waitsFirst: boolean;
}

export interface TaskEventFollowerOptions {
  /** Longest a stream stays open. */
  maxMs: number;
}

/** Where a checked stream starts: what it shows first, after which event it follows, and where it ends. */
interface StreamStart {
  /** A new stream's Task as stored, with the number of the last event it includes. */
  snapshot?: { task: Task; seq: number };
  /** Nothing follows: the snapshot was settled, or a settled task was resumed with nothing missed. */
  ended: boolean;
  after: number;
  /** A terminal task's last event: a resumed stream ends there. */
  endAt?: number;
  /**
   * The log's last event when the stream began: a settled status before it is history (a turn
   * that asked for input and was answered since), which a resumed stream replays and goes past.
   */
  current: number;
}

const GONE: StreamStart = { ended: true, after: 0, current: 0 };

/**
 * A task's stream on this replica, from the task's event log (every replica hands out the same
 * numbered events). A new stream starts with the Task as stored (numbered as the last event it
 * includes), then the events after it; a resumed one with the events after the caller's
 * Last-Event-ID, in order. It ends after the first settled status (terminal or interrupted), as
 * stored: the projection is the authority (cancel won, COMPLETED without artifact is FAILED).
 * Events reach it through the replica's TaskChangeNotifier (those logged here as they are
 * committed, one shared poll per task for those logged elsewhere). It stops at `maxMs` or as soon
 * as the caller leaves, releasing its watch and its share of the poll.
 */
export class TaskEventFollower {
  constructor(
    private readonly log: TaskEventLog,
    private readonly changes: Pick<TaskChangeNotifier, 'watch'>,
    private readonly opts: TaskEventFollowerOptions,
  ) {}

  /**
   * Checks where the stream starts before anything is sent: an unknown task is TaskNotFound, a
   * Last-Event-ID the log cannot resume from is refused.
   */
  async open(task: FollowedTask, opts: FollowOptions = {}): Promise<TaskEventStream> {
    // A caller already gone costs no read.
    const start = opts.closed?.aborted ? GONE : await this.start(task, opts.resumeAfter);
    return {
      waitsFirst: !start.snapshot && !start.ended,
      [Symbol.asyncIterator]: () => this.follow(task, start, opts),
    };
  }

  private async start({ taskId, tenant, agentId }: FollowedTask, resumeAfter: number | undefined): Promise<StreamStart> {
    if (resumeAfter === undefined) {
      const stored = await this.log.loadWithProgress(taskId, tenant, agentId);
      if (!stored) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      return {
        snapshot: { task: stored.task, seq: stored.eventSeq },
        ended: isSettled(stored.task.status?.state ?? TaskState.TASK_STATE_SUBMITTED),
        after: stored.eventSeq,
        current: 0,
      };
    }
    const page = await this.log.readEvents(taskId, tenant, agentId, resumeAfter, 0);
    if (!page) throw new TaskNotFoundError(`Task not found: ${taskId}`);
    refuseResume(taskId, resumeAfter, page);
    const state = parseState(page.state) ?? TaskState.TASK_STATE_SUBMITTED;
    return {
      // Nothing was missed, and nothing more comes.
      ended: isSettled(state) && resumeAfter >= page.lastSeq,
      after: resumeAfter,
      ...(isTerminal(state) ? { endAt: page.lastSeq } : {}),
      current: page.lastSeq,
    };
  }

  private async *follow(task: FollowedTask, start: StreamStart, opts: FollowOptions): AsyncGenerator<FollowedEvent, void, undefined> {
    const { closed } = opts;
    if (closed?.aborted) return;
    if (start.snapshot) {
      const shown = opts.shown ? opts.shown(start.snapshot.task) : start.snapshot.task;
      yield { seq: start.snapshot.seq, response: { payload: { $case: 'task', value: shown } } };
    }
    if (start.ended) return;
    const queue: LoggedEvent[] = [];
    let wake: (() => void) | undefined;
    const poke = () => wake?.();
    closed?.addEventListener('abort', poke);
    let watcher: TaskChangeWatcher | undefined;
    try {
      watcher = this.changes.watch(task.taskId, task.tenant, task.agentId, start.after, (events) => {
        queue.push(...events);
        poke();
      });
      const closeAt = Date.now() + this.opts.maxMs;
      for (;;) {
        if (closed?.aborted) return;
        if (Date.now() >= closeAt) return;
        if (queue.length === 0) {
          await wakeableSleep(Math.max(1, closeAt - Date.now()), (w) => (wake = w));
          wake = undefined;
          continue;
        }
        for (const logged of queue.splice(0)) {
          const response = StreamResponse.fromJSON(logged.event);
          yield { seq: logged.seq, response };
          const status = response.payload?.$case === 'statusUpdate' ? response.payload.value.status : undefined;
          if (status && isSettled(status.state) && logged.seq >= start.current) return;
          if (start.endAt !== undefined && logged.seq >= start.endAt) return;
          if (closed?.aborted) return;
        }
      }
    } finally {
      closed?.removeEventListener('abort', poke);
      watcher?.close();
    }
  }
}

/**
 * A Last-Event-ID the task's log cannot resume from: ahead of the task's last event, or older
 * than the oldest event still stored (the error names it: resuming from there loses the ones
 * between).
 */
function refuseResume(taskId: string, after: number, page: TaskEventPage): void {
  if (after > page.lastSeq) {
    throw new RequestMalformedError({
      message: `Last-Event-ID ${after} is not an event of task ${taskId}: its last event is ${page.lastSeq}`,
      metadata: { eventId: 'UNKNOWN', lastEventId: String(page.lastSeq) },
    });
  }
  const oldest = page.oldestSeq ?? page.lastSeq + 1;
  if (after < oldest - 1) {
    throw new RequestMalformedError({
      message:
        `Last-Event-ID ${after} of task ${taskId} has expired: the oldest event kept is ${oldest} ` +
        `(resume with Last-Event-ID ${oldest - 1}, or subscribe without one for the task as it is now)`,
      metadata: { eventId: 'EXPIRED', oldestEventId: String(oldest) },
    });
  }
}
