import { EventEmitter } from 'node:events';
import {
  AgentEvent,
  DefaultExecutionEventBus,
  type AgentExecutionEvent,
  type ExecutionEventBus,
  type ExecutionEventBusManager,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import type { Task, TaskState } from '@a2a-js/sdk';
import type { TaskEvent } from '@mesh/contract';
import type { LoggedEvent } from '../tasks/task-projection.js';

/** Where a replica's buses get worker events from (its EventFanout); it may rest while nobody here follows a task. */
export interface EventFeed {
  /** Resolves once every event not stored when it was called will reach the buses; never rejects. */
  wake(): Promise<void>;
  /** Nobody here follows a task any more. */
  idle(): void;
}

/** A stream event with the worker envelope it came from (absent for events made here, e.g. a cancel). */
export type BusListener = (event: AgentExecutionEvent, source?: TaskEvent) => void;

/**
 * One in-process bus per task, fed from the Kafka event stream by this replica's EventFanout
 * (every replica sees every event while it follows a task) and by local API changes (CancelTask)
 * — never by an executor, so `settleByTaskId` always claims the bus. SSE streams listen here for a
 * sign that a task's events are on their way (what they show comes from the task's event log:
 * `notifyLogged` here, TaskEventWatch for other replicas'). Separately,
 * the projector signals each committed change (`notifyCommitted`), which wakes blocking sends to
 * answer with the committed task. Buses are keyed by task id only: tenant scoping happens before anyone may
 * attach (the task was loaded for the caller's tenant first).
 */
export class TaskEventBusManager implements ExecutionEventBusManager {
  private readonly buses = new Map<string, { bus: DefaultExecutionEventBus; raw: EventEmitter; listeners: number }>();
  private readonly committed = new EventEmitter().setMaxListeners(0);
  private readonly logged = new EventEmitter().setMaxListeners(0);
  private feed?: EventFeed;
  private followers = 0;

  /** Connects the feed; it is woken by the first follower and told when the last one leaves. */
  feedFrom(feed: EventFeed): void {
    this.feed = feed;
  }

  createOrGetByTaskId(taskId: string, _context?: ServerCallContext): ExecutionEventBus {
    let entry = this.buses.get(taskId);
    if (!entry) {
      entry = { bus: new DefaultExecutionEventBus(), raw: new EventEmitter().setMaxListeners(0), listeners: 0 };
      this.buses.set(taskId, entry);
    }
    return entry.bus;
  }

  getByTaskId(taskId: string, _context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.buses.get(taskId)?.bus;
  }

  cleanupByTaskId(taskId: string, _context?: ServerCallContext): void {
    const entry = this.buses.get(taskId);
    if (!entry) return;
    entry.bus.removeAllListeners();
    this.buses.delete(taskId);
  }

  /** The event stream owns every bus: executors never settle them (events arrive later, from Kafka). */
  settleByTaskId(_taskId: string, _bus: ExecutionEventBus, _last: TaskState | undefined, _context: ServerCallContext): boolean {
    return true;
  }

  /** Delivers an event to whoever listens on the task in this process. */
  publish(taskId: string, event: AgentExecutionEvent): void {
    const entry = this.buses.get(taskId);
    entry?.raw.emit('event', event, undefined);
    entry?.bus.publish(event);
  }

  /** Whether anyone in this process listens to the task (the fanout skips decoding otherwise). */
  isFollowed(taskId: string): boolean {
    return this.buses.has(taskId);
  }

  /** Delivers an event read from Kafka, with its envelope (seq, execution) for ordering. */
  publishRaw(taskId: string, event: AgentExecutionEvent, source: TaskEvent): void {
    const entry = this.buses.get(taskId);
    entry?.raw.emit('event', event, source);
    entry?.bus.publish(event);
  }

  /**
   * Listens to one task. Resolves once the feed delivers every event not stored yet, so a snapshot
   * read afterwards misses nothing; the returned function detaches and drops the bus when nobody
   * is left.
   */
  async subscribe(taskId: string, listener: BusListener): Promise<() => void> {
    this.createOrGetByTaskId(taskId);
    const entry = this.buses.get(taskId)!;
    entry.listeners += 1;
    entry.raw.on('event', listener);
    this.followers += 1;
    let done = false;
    const unsubscribe = () => {
      if (done) return;
      done = true;
      entry.raw.off('event', listener);
      entry.listeners -= 1;
      if (entry.listeners === 0 && this.buses.get(taskId) === entry) this.buses.delete(taskId);
      this.followers -= 1;
      if (this.followers === 0) this.feed?.idle();
    };
    await this.feed?.wake();
    return unsubscribe;
  }

  /**
   * The projector committed this task as given (the stored row, not the raw event), so a waiter
   * may answer with it without reading it back; other replicas' waiters re-read on their poll.
   */
  notifyCommitted(task: Task): void {
    this.committed.emit(task.id, task);
  }

  /**
   * A change this process committed itself (CancelTask, a deadline passing): its status goes to
   * the task's streams here, and blocking sends waiting on it here answer with it at once.
   */
  committedHere(task: Task): void {
    if (task.status)
      this.publish(
        task.id,
        AgentEvent.statusUpdate({ taskId: task.id, contextId: task.contextId, status: task.status, metadata: undefined }),
      );
    this.notifyCommitted(task);
  }

  /**
   * The projector of this process logged these events of the task (numbered, in order): streams
   * here show them without reading them back.
   */
  notifyLogged(taskId: string, events: readonly LoggedEvent[]): void {
    if (events.length > 0) this.logged.emit(taskId, events);
  }

  /** Calls `listener` with each run of events of the task logged in this process. */
  onLogged(taskId: string, listener: (events: readonly LoggedEvent[]) => void): () => void {
    this.logged.on(taskId, listener);
    return () => void this.logged.off(taskId, listener);
  }

  /** Calls `listener` with each committed change of the task in this process. */
  onCommitted(taskId: string, listener: (task: Task) => void): () => void {
    this.committed.on(taskId, listener);
    return () => void this.committed.off(taskId, listener);
  }
}
