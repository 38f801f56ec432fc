import {
  DefaultExecutionEventBus,
  type AgentExecutionEvent,
  type ExecutionEventBus,
  type ExecutionEventBusManager,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import type { TaskState } from '@a2a-js/sdk';

/**
 * One in-process bus per task, fed by the event projector after each event is committed (not
 * by an executor). Everything waiting on a task in this process — blocking SendMessage now, SSE
 * subscribers in part 2 — listens here. The buses are keyed by task id only: tenant scoping
 * happens before anyone may attach (the task was loaded for the caller's tenant first).
 */
export class TaskEventBusManager implements ExecutionEventBusManager {
  private readonly buses = new Map<string, { bus: DefaultExecutionEventBus; listeners: number }>();

  createOrGetByTaskId(taskId: string, _context?: ServerCallContext): ExecutionEventBus {
    let entry = this.buses.get(taskId);
    if (!entry) {
      entry = { bus: new DefaultExecutionEventBus(), listeners: 0 };
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

  /** Delivers a committed event to whoever listens on the task in this process. */
  publish(taskId: string, event: AgentExecutionEvent): void {
    this.buses.get(taskId)?.bus.publish(event);
  }

  /** Listens to one task; the returned function detaches and drops the bus when nobody is left. */
  subscribe(taskId: string, listener: (event: AgentExecutionEvent) => void): () => void {
    const bus = this.createOrGetByTaskId(taskId);
    const entry = this.buses.get(taskId)!;
    entry.listeners += 1;
    bus.on('event', listener);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      bus.off('event', listener);
      entry.listeners -= 1;
      if (entry.listeners === 0 && this.buses.get(taskId) === entry) this.buses.delete(taskId);
    };
  }
}
