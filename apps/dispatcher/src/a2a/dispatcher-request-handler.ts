import { trace } from '@opentelemetry/api';
import { SpanAttr, traceHeaders } from '@mesh/telemetry';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, STATE_HEADERS_KEY, type A2ARequestHandler, type ServerCallContext } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { AgentRecord } from '@mesh/contract';
import type { TaskService } from '../tasks/task.service.js';
import { PostgresTaskStore } from '../tasks/postgres-task.store.js';
import { isSettled } from '../tasks/task-state.js';
import type { TaskEventBusManager } from '../events/task-event-bus.manager.js';
import { principalOf } from './principal-user.js';

/** Header a caller may use to shorten how long a blocking SendMessage waits (milliseconds). */
export const REQUEST_TIMEOUT_HEADER = 'x-request-timeout-ms';

export interface DispatcherHandlerOptions {
  /** Longest a blocking SendMessage waits before returning the task as it is. */
  maxBlockingMs: number;
  /** Re-read interval while waiting, so a replica that does not consume the task's events still sees it settle. */
  waitPollMs: number;
}

/** Wakes the outbox relay after a commit. */
export interface CommandRelay {
  kick(): void;
}

/**
 * The A2A request handler of one agent. Reads (GetTask, ListTasks, the capability refusals for
 * streaming, push and the extended card) are the SDK's DefaultRequestHandler over
 * PostgresTaskStore. SendMessage and CancelTask are the dispatcher's own, because the agent runs
 * elsewhere: accept = dedup + task + outbox command in one transaction, then (if blocking) wait
 * for the projected events until the task settles or the request's deadline passes.
 */
export class DispatcherRequestHandler implements A2ARequestHandler {
  private readonly reads: DefaultRequestHandler;

  constructor(
    private readonly card: AgentCard,
    private readonly agent: AgentRecord,
    private readonly tasks: TaskService,
    private readonly buses: TaskEventBusManager,
    private readonly relay: CommandRelay,
    private readonly opts: DispatcherHandlerOptions,
  ) {
    const neverExecutes = {
      execute: async () => {
        throw new Error('the dispatcher never executes agents in-process');
      },
      cancelTask: async () => undefined,
    };
    this.reads = new DefaultRequestHandler(card, new PostgresTaskStore(tasks, agent.id), neverExecutes, buses);
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  getAuthenticatedExtendedAgentCard(params: GetExtendedAgentCardRequest, context: ServerCallContext): Promise<AgentCard> {
    principalOf(context);
    return this.reads.getAuthenticatedExtendedAgentCard(params, context);
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const principal = principalOf(context);
    const message = params.message;
    if (!message) throw new RequestMalformedError('message is required');
    if (!message.messageId?.trim()) throw new RequestMalformedError('message.messageId is required');
    if (!message.parts?.length) throw new RequestMalformedError('message.parts must not be empty');
    const startedAt = Date.now();
    const headers = (context.state.get(STATE_HEADERS_KEY) ?? {}) as Record<string, string | string[] | undefined>;
    const { task } = await this.tasks.accept({
      principal,
      agent: this.agent,
      message,
      // The server span's own context (it continues a caller's traceparent when one was sent).
      traceparent: traceHeaders().traceparent ?? (typeof headers.traceparent === 'string' ? headers.traceparent : undefined),
    });
    trace.getActiveSpan()?.setAttributes({ [SpanAttr.taskId]: task.id, [SpanAttr.contextId]: task.contextId });
    this.relay.kick();
    const settled = params.configuration?.returnImmediately
      ? task
      : await this.waitSettled(task, principal.tenant, startedAt + this.waitBudget(headers));
    return withHistoryLength(settled, params.configuration?.historyLength);
  }

  private waitBudget(headers: Record<string, string | string[] | undefined>): number {
    const raw = headers[REQUEST_TIMEOUT_HEADER];
    const asked = typeof raw === 'string' && /^\d{1,9}$/.test(raw.trim()) ? Number(raw) : undefined;
    return Math.min(asked ?? this.opts.maxBlockingMs, this.opts.maxBlockingMs);
  }

  /** Waits for a settled state (terminal or interrupted) or the deadline; never throws on timeout. */
  private async waitSettled(task: Task, tenant: string, deadline: number): Promise<Task> {
    if (task.status && isSettled(task.status.state)) return task;
    let dirty = false;
    let wake: (() => void) | undefined;
    // Only a settling status is worth a re-read; artifacts and WORKING are not.
    const unsubscribe = this.buses.subscribe(task.id, (event) => {
      if (event.kind !== 'statusUpdate' || !event.data.status || !isSettled(event.data.status.state)) return;
      dirty = true;
      wake?.();
    });
    try {
      let current = task;
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) return current;
        if (!dirty) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(done, Math.min(left, this.opts.waitPollMs));
            function done() {
              clearTimeout(t);
              resolve();
            }
            wake = done;
          });
          wake = undefined;
        }
        dirty = false;
        current = (await this.tasks.load(task.id, tenant, this.agent.id)) ?? current;
        if (current.status && isSettled(current.status.state)) return current;
      }
    } finally {
      unsubscribe();
    }
  }

  sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    principalOf(context);
    return this.reads.sendMessageStream(params, context);
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    principalOf(context);
    return this.reads.getTask(params, context);
  }

  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    principalOf(context);
    return this.reads.listTasks(params, context);
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const principal = principalOf(context);
    if (!params.id?.trim()) throw new RequestMalformedError('task id is required');
    const { task, changed } = await this.tasks.cancel(params.id, principal, this.agent);
    if (changed) {
      this.relay.kick();
      if (task.status)
        this.buses.publish(
          task.id,
          AgentEvent.statusUpdate({ taskId: task.id, contextId: task.contextId, status: task.status, metadata: undefined }),
        );
    }
    return task;
  }

  createTaskPushNotificationConfig(params: TaskPushNotificationConfig, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    principalOf(context);
    return this.reads.createTaskPushNotificationConfig(params, context);
  }

  getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    principalOf(context);
    return this.reads.getTaskPushNotificationConfig(params, context);
  }

  listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    principalOf(context);
    return this.reads.listTaskPushNotificationConfigs(params, context);
  }

  deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<void> {
    principalOf(context);
    return this.reads.deleteTaskPushNotificationConfig(params, context);
  }

  resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    principalOf(context);
    return this.reads.resubscribe(params, context);
  }
}

/** historyLength: absent = all, 0 = none, N = the N most recent messages (as the SDK does). */
function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength <= 0 ? [] : task.history.slice(-historyLength) };
}
