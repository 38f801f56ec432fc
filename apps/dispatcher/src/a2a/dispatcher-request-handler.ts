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
import { TaskState } from '@a2a-js/sdk';
import {
  DefaultRequestHandler,
  STATE_HEADERS_KEY,
  type A2ARequestHandler,
  type AgentExecutionEvent,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { wakeableSleep, type AgentRecord, type TaskEvent } from '@mesh/contract';
import type { TaskService } from '../tasks/task.service.js';
import { PostgresTaskStore } from '../tasks/postgres-task.store.js';
import { isSettled, isTerminal, stateRank } from '../tasks/task-state.js';
import type { TaskEventBusManager } from '../events/task-event-bus.manager.js';
import type { StoredTaskWatch, StoredTaskWatcher } from '../events/stored-task-watch.js';
import { principalOf, PrincipalUser } from './principal-user.js';
import type { PushService } from '../push/push.service.js';
import type { MeshMetrics } from '@mesh/telemetry';

/** Header a caller may use to shorten how long a blocking SendMessage waits (milliseconds). */
export const REQUEST_TIMEOUT_HEADER = 'x-request-timeout-ms';

export interface DispatcherHandlerOptions {
  /** Longest a blocking SendMessage waits before returning the task as it is. */
  maxBlockingMs: number;
  /** Stored changes of followed tasks, shared by every stream and blocking send of a task on this replica. */
  storedTasks: StoredTaskWatch;
  /**
   * A task found settled in the store before the feed brought the events leading there: how long a
   * stream still waits for them (none come for a cancel or deadline committed on another replica).
   */
  settleGraceMs: number;
  /** Longest an SSE stream stays open. */
  streamMaxMs: number;
  /** Deadline given to tasks whose caller gives none (0: none). */
  defaultDeadlineMs: number;
  /** Longest deadline a caller may ask for (0: unbounded). */
  maxDeadlineMs: number;
  /** Where accepted tasks, API cancels and dedup hits are counted. */
  metrics?: MeshMetrics;
}

/** Relative deadline header (milliseconds from now); message metadata `deadlineUnixMs` is absolute. */
export const DEADLINE_HEADER = 'a2a-deadline-ms';

/** Wakes the outbox relay after a commit. */
export interface CommandRelay {
  kick(): void;
}

/** The dispatcher's services every agent's handler shares. */
export interface DispatcherHandlerServices {
  tasks: TaskService;
  buses: TaskEventBusManager;
  relay: CommandRelay;
  push: PushService;
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

  private readonly tasks: TaskService;
  private readonly buses: TaskEventBusManager;
  private readonly relay: CommandRelay;
  private readonly push: PushService;

  constructor(
    private readonly card: AgentCard,
    private readonly agent: AgentRecord,
    services: DispatcherHandlerServices,
    private readonly opts: DispatcherHandlerOptions,
  ) {
    this.tasks = services.tasks;
    this.buses = services.buses;
    this.relay = services.relay;
    this.push = services.push;
    const neverExecutes = {
      execute: async () => {
        throw new Error('the dispatcher never executes agents in-process');
      },
      cancelTask: async () => undefined,
    };
    this.reads = new DefaultRequestHandler(card, new PostgresTaskStore(this.tasks, agent.id), neverExecutes, this.buses);
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
    const startedAt = Date.now();
    const headers = (context.state.get(STATE_HEADERS_KEY) ?? {}) as Record<string, string | string[] | undefined>;
    const task = await this.accept(params, context);
    const settled = params.configuration?.returnImmediately
      ? task
      : await this.waitSettled(task, principal.tenant, startedAt + this.waitBudget(headers), connectionClosed(context));
    return withHistoryLength(settled, params.configuration?.historyLength);
  }

  /** Validates and accepts a message (new task or follow-up turn); wakes the relay. */
  private async accept(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    const principal = principalOf(context);
    const message = params.message;
    if (!message) throw new RequestMalformedError('message is required');
    if (!message.messageId?.trim()) throw new RequestMalformedError('message.messageId is required');
    if (!message.parts?.length) throw new RequestMalformedError('message.parts must not be empty');
    const headers = (context.state.get(STATE_HEADERS_KEY) ?? {}) as Record<string, string | string[] | undefined>;
    const deadlineUnixMs = this.deadlineOf(message, headers);
    // A config given with the message is checked first and stored in the same statement as the
    // task, so no event of the task can be projected before it exists (stored afterwards, the relay
    // of another replica could send the command and the first events went unpushed).
    const pushConfig = params.configuration?.taskPushNotificationConfig;
    const push = pushConfig ? await this.push.validate(pushConfig) : undefined;
    const { task, duplicate } = await this.tasks.accept({
      principal,
      agent: this.agent,
      message,
      ...(push ? { push } : {}),
      ...(deadlineUnixMs !== undefined ? { deadlineUnixMs } : {}),
      // The server span's own context (it continues a caller's traceparent when one was sent).
      traceparent: traceHeaders().traceparent ?? (typeof headers.traceparent === 'string' ? headers.traceparent : undefined),
    });
    trace.getActiveSpan()?.setAttributes({ [SpanAttr.taskId]: task.id, [SpanAttr.contextId]: task.contextId });
    // A retry of an accepted message (or the same work already running) stores the config now,
    // from here on; the same id replaces it.
    if (pushConfig && duplicate) await this.push.create(principal.tenant, task.id, { ...pushConfig, taskId: task.id });
    if (duplicate) this.opts.metrics?.dedupHits.inc({ kind: duplicate, agent: this.agent.id });
    else this.opts.metrics?.tasks.inc({ tenant: principal.tenant, agent: this.agent.id, outcome: 'accepted' });
    this.relay.kick();
    return task;
  }

  /**
   * The task's deadline: message metadata `deadlineUnixMs` (absolute) or the `A2A-Deadline-Ms`
   * header (relative), else the default; never later than now + the maximum.
   */
  private deadlineOf(message: Message, headers: Record<string, string | string[] | undefined>): number | undefined {
    const now = Date.now();
    let deadline: number | undefined;
    const meta = (message.metadata as Record<string, unknown> | undefined)?.deadlineUnixMs;
    if (meta !== undefined) {
      const n = typeof meta === 'string' ? Number(meta) : meta;
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) {
        throw new RequestMalformedError('metadata.deadlineUnixMs must be a positive integer (milliseconds since the epoch)');
      }
      deadline = n;
    }
    const rel = headers[DEADLINE_HEADER];
    if (deadline === undefined && rel !== undefined) {
      if (typeof rel !== 'string' || !/^\d{1,10}$/.test(rel.trim())) {
        throw new RequestMalformedError('A2A-Deadline-Ms must be a non-negative integer (milliseconds from now)');
      }
      deadline = now + Number(rel);
    }
    if (deadline === undefined && this.opts.defaultDeadlineMs > 0) deadline = now + this.opts.defaultDeadlineMs;
    if (this.opts.maxDeadlineMs > 0) deadline = Math.min(deadline ?? Infinity, now + this.opts.maxDeadlineMs);
    return deadline;
  }

  private waitBudget(headers: Record<string, string | string[] | undefined>): number {
    const raw = headers[REQUEST_TIMEOUT_HEADER];
    const asked = typeof raw === 'string' && /^\d{1,9}$/.test(raw.trim()) ? Number(raw) : undefined;
    return Math.min(asked ?? this.opts.maxBlockingMs, this.opts.maxBlockingMs);
  }

  /**
   * Waits for a settled state (terminal or interrupted), the deadline or the caller leaving
   * (`closed`); never throws on timeout. It waits on the replica's StoredTaskWatch, as streams do:
   * commits made here as they happen, and the task's one shared poll — at the hurried interval, a
   * blocking caller expects an answer soon — for changes committed elsewhere.
   */
  private async waitSettled(task: Task, tenant: string, deadline: number, closed?: AbortSignal): Promise<Task> {
    if (task.status && isSettled(task.status.state)) return task;
    if (closed?.aborted) return task;
    let watcher: StoredTaskWatcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    let onClosed: (() => void) | undefined;
    try {
      return await new Promise<Task>((resolve) => {
        watcher = this.opts.storedTasks.watch(task.id, tenant, this.agent.id, (stored) => {
          if (stored.status && isSettled(stored.status.state)) resolve(stored);
        });
        watcher.hurry();
        timer = setTimeout(() => resolve(task), Math.max(0, deadline - Date.now()));
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

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const principal = principalOf(context);
    const task = await this.accept(params, context);
    yield* this.follow(task.id, principal.tenant, connectionClosed(context));
  }

  /**
   * A task's stream on this replica: subscribe to the local bus (fed from Kafka by EventFanout)
   * first, then read the snapshot, so nothing falls in between. First event = the Task; then
   * status and artifact updates in event order, duplicates (same execution, seq not above the last
   * one shown or stored with the snapshot) dropped and no status ranked below the last one sent;
   * the end is the settled state *as stored* (the projection is the authority: cancel won,
   * COMPLETED without artifact is FAILED). The stream waits on events only: stored changes reach it
   * through the replica's StoredTaskWatch (commits made here as they happen, one shared poll per
   * task for those made elsewhere), never through a read of its own. It stops as soon as the
   * caller's connection closes (`closed`), releasing its subscription and its share of the poll.
   */
  private async *follow(taskId: string, tenant: string, closed?: AbortSignal): AsyncGenerator<StreamResponse, void, undefined> {
    if (closed?.aborted) return;
    const queue: Array<{ event: AgentExecutionEvent; source?: TaskEvent }> = [];
    /** The task as stored once it settled. */
    let settled: Task | undefined;
    let wake: (() => void) | undefined;
    const poke = () => wake?.();
    closed?.addEventListener('abort', poke);
    let unsubscribe: (() => void) | undefined;
    let watcher: StoredTaskWatcher | undefined;
    try {
      unsubscribe = await this.buses.subscribe(taskId, (event, source) => {
        queue.push({ event, source });
        poke();
      });
      if (closed?.aborted) return;
      const stored = await this.tasks.loadWithProgress(taskId, tenant, this.agent.id);
      if (!stored) throw new TaskNotFoundError(`Task not found: ${taskId}`);
      if (closed?.aborted) return;
      const snapshot = stored.task;
      yield { payload: { $case: 'task', value: snapshot } };
      let state = snapshot.status?.state ?? TaskState.TASK_STATE_SUBMITTED;
      if (isSettled(state)) return;
      watcher = this.opts.storedTasks.watch(taskId, tenant, this.agent.id, (task) => {
        if (!task.status || !isSettled(task.status.state)) return;
        settled = task;
        poke();
      });
      // Events the snapshot already holds (the feed may deliver them again) are not shown twice.
      const lastSeq = new Map<string, number>(Object.entries(stored.lastSeq));
      /** A settling event came through the feed (then the stored end may be sent at once). */
      let settling = false;
      /** Stored as settled before the feed brought its events: how long they may still come. */
      let graceEnd: number | undefined;
      const endAt = Date.now() + this.opts.streamMaxMs;
      for (;;) {
        if (closed?.aborted) return;
        const now = Date.now();
        if (now >= endAt) return;
        if (settled) {
          graceEnd ??= now + this.opts.settleGraceMs;
          if (queue.length === 0 && (settling || now >= graceEnd)) {
            const end = settled;
            yield {
              payload: { $case: 'statusUpdate', value: { taskId, contextId: end.contextId, status: end.status, metadata: undefined } },
            };
            return;
          }
        }
        if (queue.length === 0) {
          const until = settled && graceEnd !== undefined ? Math.min(endAt, graceEnd) : endAt;
          await wakeableSleep(Math.max(1, until - Date.now()), (w) => (wake = w));
          wake = undefined;
        }
        const batch = queue.splice(0);
        for (const { event, source } of batch) {
          if (source) {
            const last = lastSeq.get(source.identity.executionId) ?? -1;
            if (source.body.seq <= last) continue;
            lastSeq.set(source.identity.executionId, source.body.seq);
          }
          if (event.kind === 'artifactUpdate') {
            yield { payload: { $case: 'artifactUpdate', value: event.data } };
          } else if (event.kind === 'statusUpdate' && event.data.status) {
            const next = event.data.status.state;
            if (isSettled(next)) {
              settling = true;
              // Stored by another replica's projector, the end arrives through the poll: soon.
              watcher.hurry();
            } else if (stateRank(next) >= stateRank(state)) {
              state = next;
              yield { payload: { $case: 'statusUpdate', value: event.data } };
            }
          }
          if (closed?.aborted) return;
        }
      }
    } finally {
      closed?.removeEventListener('abort', poke);
      watcher?.close();
      unsubscribe?.();
    }
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
      this.opts.metrics?.tasks.inc({ tenant: principal.tenant, agent: this.agent.id, outcome: 'canceled' });
      this.push.kick(); // its deliveries were stored with the change
      this.buses.committedHere(task);
    }
    return task;
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const principal = principalOf(context);
    await this.requireOwnTask(params.taskId, principal.tenant);
    return this.push.create(principal.tenant, params.taskId, params);
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const principal = principalOf(context);
    await this.requireOwnTask(params.taskId, principal.tenant);
    return this.push.get(principal.tenant, params.taskId, params.id);
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const principal = principalOf(context);
    await this.requireOwnTask(params.taskId, principal.tenant);
    return { configs: await this.push.list(principal.tenant, params.taskId), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<void> {
    const principal = principalOf(context);
    await this.requireOwnTask(params.taskId, principal.tenant);
    await this.push.delete(principal.tenant, params.taskId, params.id);
  }

  /** The task exists for this tenant and agent (else TaskNotFound, whoever owns it). */
  private async requireOwnTask(taskId: string, tenant: string): Promise<void> {
    if (!taskId?.trim()) throw new RequestMalformedError('taskId is required');
    if (!(await this.tasks.load(taskId, tenant, this.agent.id))) throw new TaskNotFoundError(`Task not found: ${taskId}`);
  }

  async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const principal = principalOf(context);
    if (!params.id?.trim()) throw new RequestMalformedError('task id is required');
    const task = await this.tasks.load(params.id, principal.tenant, this.agent.id);
    if (!task) throw new TaskNotFoundError(`Task not found: ${params.id}`);
    if (task.status && isTerminal(task.status.state)) {
      throw new UnsupportedOperationError(`Task ${params.id} is in a terminal state and cannot be subscribed to.`);
    }
    yield* this.follow(params.id, principal.tenant, connectionClosed(context));
  }
}

/** Aborted when the caller's connection closes (set by the A2A router). */
function connectionClosed(context: ServerCallContext): AbortSignal | undefined {
  return context.user instanceof PrincipalUser ? context.user.closed : undefined;
}

/** historyLength: absent = all, 0 = none, N = the N most recent messages (as the SDK does). */
function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength <= 0 ? [] : task.history.slice(-historyLength) };
}
