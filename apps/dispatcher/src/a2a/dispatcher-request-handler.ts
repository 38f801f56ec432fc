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
import {
  DefaultRequestHandler,
  STATE_HEADERS_KEY,
  type A2ARequestHandler,
  type ExecutionEventBusManager,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { reservedNameIn, type AgentRecord } from '@mesh/contract';
import type { A2aTasks } from './a2a-tasks.js';
import { PostgresTaskStore } from '../tasks/postgres-task.store.js';
import { isTerminal } from '../tasks/task-state.js';
import type { TaskChangeNotifier } from '../tasks/task-change-notifier.js';
import type { TaskCommits } from '../tasks/task-commits.js';
import type { TaskEventFollower } from '../events/task-event-follower.js';
import type { StreamEventIds } from './stream-event-ids.js';
import { principalOf, PrincipalUser } from './principal-user.js';
import type { RequestTimes } from './a2a-time.headers.js';
import type { PushService } from '../push/push.service.js';
import { wireVersionOf } from '../push/push-config.js';
import type { MeshMetrics } from '@mesh/telemetry';

export interface DispatcherHandlerOptions {
  /** Longest a blocking SendMessage waits before returning the task as it is. */
  maxBlockingMs: number;
  /** Logged events of watched tasks, shared by every stream and blocking send of a task on this replica. */
  changes: TaskChangeNotifier;
  /** Deadline given to tasks whose caller gives none (0: none). */
  defaultDeadlineMs: number;
  /** Longest deadline a caller may ask for (0: unbounded). */
  maxDeadlineMs: number;
  /** Where dedup hits are counted (accepted tasks and API cancels are counted by TaskCommits). */
  metrics?: MeshMetrics;
}

/** The dispatcher's services every agent's handler shares. */
export interface DispatcherHandlerServices {
  tasks: A2aTasks;
  /** The post-commit hook: wakes the relay, the push sender and the task's watchers; counts the turn. */
  commits: Pick<TaskCommits, 'committed'>;
  push: PushService;
  /** Follows a task's event log for SSE streams and resubscription. */
  follower: TaskEventFollower;
}

/** The SDK's handler reads its bus manager only in the methods implemented here (sends, cancel, resubscribe): never. */
const noExecutionBuses: ExecutionEventBusManager = {
  createOrGetByTaskId: () => {
    throw new Error('the dispatcher never runs executors in-process: no execution bus');
  },
  getByTaskId: () => undefined,
  cleanupByTaskId: () => undefined,
};

/**
 * The A2A request handler of one agent. Reads (GetTask, ListTasks, the capability refusals for
 * streaming, push and the extended card) are the SDK's DefaultRequestHandler over
 * PostgresTaskStore. SendMessage and CancelTask are the dispatcher's own, because the agent runs
 * elsewhere: accept = dedup + task + outbox command in one transaction, then (if blocking) wait
 * for the projected events until the task settles or the request's deadline passes.
 */
export class DispatcherRequestHandler implements A2ARequestHandler {
  private readonly reads: DefaultRequestHandler;

  private readonly tasks: A2aTasks;
  private readonly commits: Pick<TaskCommits, 'committed'>;
  private readonly push: PushService;
  private readonly follower: TaskEventFollower;

  constructor(
    private readonly card: AgentCard,
    private readonly agent: AgentRecord,
    services: DispatcherHandlerServices,
    private readonly opts: DispatcherHandlerOptions,
  ) {
    this.tasks = services.tasks;
    this.commits = services.commits;
    this.push = services.push;
    this.follower = services.follower;
    const neverExecutes = {
      execute: async () => {
        throw new Error('the dispatcher never executes agents in-process');
      },
      cancelTask: async () => undefined,
    };
    this.reads = new DefaultRequestHandler(card, new PostgresTaskStore(this.tasks, agent.id), neverExecutes, noExecutionBuses);
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
    const { task, eventSeq } = await this.accept(params, context);
    const settled = params.configuration?.returnImmediately
      ? task
      : await this.waitSettled(task, eventSeq, principal.tenant, startedAt + this.waitBudget(context), connectionClosed(context));
    return withHistoryLength(settled, params.configuration?.historyLength);
  }

  /**
   * Accepts a message (new task or follow-up turn); wakes the relay. Its shape was checked at the
   * edge (a2a-request.validator.ts): the message, its id and parts are there.
   */
  private async accept(params: SendMessageRequest, context: ServerCallContext): Promise<{ task: Task; eventSeq: number }> {
    const principal = principalOf(context);
    const message = params.message!;
    // The platform's own ids and metadata keys: a caller could otherwise pose as the platform to an
    // agent (forged delegation results) or claim the id of a child or a resumed turn first.
    const reserved = reservedNameIn(message);
    if (reserved) throw new RequestMalformedError(`${reserved.field} ${reserved.problem}`);
    const headers = (context.state.get(STATE_HEADERS_KEY) ?? {}) as Record<string, string | string[] | undefined>;
    const deadlineUnixMs = this.deadlineOf(message, timesOf(context));
    // A config given with the message is checked first and stored in the same statement as the
    // task, so no event of the task can be projected before it exists (stored afterwards, the relay
    // of another replica could send the command and the first events went unpushed).
    const pushConfig = params.configuration?.taskPushNotificationConfig;
    const wireVersion = wireVersionOf(context.requestedVersion);
    const push = pushConfig ? await this.push.validate(pushConfig, wireVersion) : undefined;
    const { task, duplicate, eventSeq } = await this.tasks.accept({
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
    if (pushConfig && duplicate) await this.push.create(principal.tenant, task.id, { ...pushConfig, taskId: task.id }, wireVersion);
    if (duplicate) this.opts.metrics?.dedupHits.inc({ kind: duplicate, agent: this.agent.id });
    this.commits.committed({
      commands: true,
      ...(duplicate
        ? {}
        : {
            // A follow-up turn logged the task's resubmission: a stream resumed on it reads it,
            // here or on another replica. A new task has no watcher to tell.
            changed: [{ taskId: task.id }],
            told: eventSeq === 0,
            outcomes: [{ tenant: principal.tenant, agent: this.agent.id, outcome: 'accepted' }],
          }),
    });
    return { task, eventSeq };
  }

  /**
   * The task's deadline: message metadata `deadlineUnixMs` (absolute; a positive integer or its
   * decimal string, as the edge checked) or the `A2A-Deadline-Ms` header (relative, parsed at the
   * edge), else the default; never later than now + the maximum.
   */
  private deadlineOf(message: Message, times: RequestTimes): number | undefined {
    const now = Date.now();
    const meta = (message.metadata as Record<string, unknown> | undefined)?.deadlineUnixMs;
    let deadline = meta === undefined ? undefined : Number(meta);
    if (deadline === undefined && times.deadlineMs !== undefined) deadline = now + times.deadlineMs;
    if (deadline === undefined && this.opts.defaultDeadlineMs > 0) deadline = now + this.opts.defaultDeadlineMs;
    if (this.opts.maxDeadlineMs > 0) deadline = Math.min(deadline ?? Infinity, now + this.opts.maxDeadlineMs);
    return deadline;
  }

  /** How long a blocking send waits: the caller's x-request-timeout-ms (parsed at the edge), at most the maximum. */
  private waitBudget(context: ServerCallContext): number {
    return Math.min(timesOf(context).timeoutMs ?? this.opts.maxBlockingMs, this.opts.maxBlockingMs);
  }

  /**
   * Waits for a settled state, the deadline or the caller leaving (`closed`); never throws on
   * timeout. It follows the task's event log after `eventSeq` (where the accept left it) on the
   * replica's TaskChangeNotifier, as streams do.
   */
  private waitSettled(task: Task, eventSeq: number, tenant: string, deadline: number, closed?: AbortSignal): Promise<Task> {
    return this.opts.changes.waitSettled(task, tenant, this.agent.id, eventSeq, {
      deadline,
      ...(closed ? { closed } : {}),
      load: () => this.tasks.load(task.id, tenant, this.agent.id),
    });
  }

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const principal = principalOf(context);
    const { task } = await this.accept(params, context);
    // Always from the snapshot, Last-Event-ID or not: a message may start a new task, where an id
    // means nothing (resuming is SubscribeToTask's). A retried message (the same task by dedup)
    // starts again from the snapshot, with ids the caller can skip what it saw by.
    yield* this.follow(task.id, principal.tenant, context, undefined, params.configuration?.historyLength);
  }

  /**
   * A task's stream (see TaskEventFollower), each event with its number in the task's log as its
   * SSE id. `resumeAfter`: the caller's Last-Event-ID; `historyLength`: the message's
   * `configuration.historyLength`, applied to the Task that opens a new stream.
   */
  private async *follow(
    taskId: string,
    tenant: string,
    context: ServerCallContext,
    resumeAfter?: number,
    historyLength?: number,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const ids = streamIdsOf(context);
    const stream = await this.follower.open(
      { taskId, tenant, agentId: this.agent.id },
      { resumeAfter, closed: connectionClosed(context), shown: (task) => withHistoryLength(task, historyLength) },
    );
    // No snapshot comes first, and the next event may be far off: the caller gets headers now.
    if (stream.waitsFirst) ids?.open();
    for await (const { seq, response } of stream) {
      ids?.next(seq);
      yield response;
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
    const { task, changed, ended } = await this.tasks.cancel(params.id, principal, this.agent);
    if (changed) {
      // Its cancel command and push deliveries were stored with the change.
      this.commits.committed({
        commands: true,
        deliveries: true,
        changed: ended,
        outcomes: [{ tenant: principal.tenant, agent: this.agent.id, outcome: 'canceled' }],
      });
    }
    return task;
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const principal = principalOf(context);
    await this.requireOwnTask(params.taskId, principal.tenant);
    return this.push.create(principal.tenant, params.taskId, params, wireVersionOf(context.requestedVersion));
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
    if (!(await this.tasks.load(taskId, tenant, this.agent.id))) throw new TaskNotFoundError(`Task not found: ${taskId}`);
  }

  async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const principal = principalOf(context);
    const resumeAfter = streamIdsOf(context)?.resumeAfter;
    // Resuming replays what was missed, also of a task that ended meanwhile (follow checks the id).
    if (resumeAfter === undefined) {
      const task = await this.tasks.load(params.id, principal.tenant, this.agent.id);
      if (!task) throw new TaskNotFoundError(`Task not found: ${params.id}`);
      if (task.status && isTerminal(task.status.state)) {
        throw new UnsupportedOperationError(
          `Task ${params.id} is in a terminal state and cannot be subscribed to (send Last-Event-ID to replay the events after an id).`,
        );
      }
    }
    yield* this.follow(params.id, principal.tenant, context, resumeAfter);
  }
}

/** The SSE ids of a streaming request and the caller's Last-Event-ID (set by the A2A router). */
function streamIdsOf(context: ServerCallContext): StreamEventIds | undefined {
  return context.user instanceof PrincipalUser ? context.user.streamIds : undefined;
}

/** A send's time headers as the edge parsed them (none: not given). */
function timesOf(context: ServerCallContext): RequestTimes {
  return context.user instanceof PrincipalUser ? context.user.times : {};
}

/** Aborted when the caller's connection closes (set by the A2A router). */
function connectionClosed(context: ServerCallContext): AbortSignal | undefined {
  return context.user instanceof PrincipalUser ? context.user.closed : undefined;
}

/** historyLength (0 or more, as the edge checked): absent = all, 0 = none, N = the N most recent messages (as the SDK does). */
function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };
}
