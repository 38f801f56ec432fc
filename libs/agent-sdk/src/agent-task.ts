import type { DelegationJoin, JsonObject, JsonValue } from '@mesh/contract';

/** What any part may carry besides its content (A2A: every part kind has them). */
export interface PartAttributes {
  mediaType?: string;
  filename?: string;
  metadata?: JsonObject;
}

/** One piece of message content, independent of the A2A wire version. */
export type Part = PartAttributes &
  (
    | { type: 'text'; text: string }
    /** Any JSON value but null (most often an object): check its type before reading fields. */
    | { type: 'data'; data: JsonValue }
    | { type: 'file'; url?: string; bytesBase64?: string }
  );

/** A message of the conversation: from the user or from this agent. */
export interface AgentMessage {
  role: 'user' | 'agent';
  parts: Part[];
  messageId?: string;
  metadata?: JsonObject;
}

/** One turn of a task as the handler sees it. */
export interface AgentTask {
  agentId: string;
  tenant: string;
  taskId: string;
  contextId: string;
  /** 0 for the first message of a task, +1 for every reply after INPUT_REQUIRED. */
  turn: number;
  /** End user the agent acts on behalf of. */
  subject: string;
  /** Calling client or agent. */
  actor: string;
  /** The message of this turn. */
  message: AgentMessage;
  /** Shortcut for `message.parts`. */
  parts: Part[];
  /** Earlier messages of this task, oldest first (user messages and this agent's replies). */
  history: AgentMessage[];
  /** When the caller stops waiting; the handler should stop before it. */
  deadline?: Date;
  /**
   * On the turn after one that delegated: how the children ended (the message of the turn is the
   * platform's, carrying the same results as a data part).
   */
  delegation?: DelegationOutcome;
  /** The task that delegated this one, when another agent did. */
  parentTaskId?: string;
  /** Scopes the task acts with, when the caller's token carried any (a delegated task's only narrow). */
  scopes?: string[];
  /** Aborted on cancel and at the deadline; pass it on to anything slow. */
  signal: AbortSignal;
}

/** What the agent wants a tool to do: a namespaced tool name (`mcp__{server}__{tool}`) and arguments. */
export interface ToolIntent {
  tool: string;
  args?: JsonObject;
}

/** Common fields of every observation. */
interface ObservationBase {
  tool: string;
  /** `{tenant}:{task_id}:{tool}:{args_hash}`: the same intent in the same task always has the same key. */
  idempotencyKey: string;
}

/** The tool answered. `replayed` is true when the answer came from the effect ledger, not a new call. */
export interface ToolResultObservation extends ObservationBase {
  status: 'ok' | 'error';
  /** Text content of the answer, joined. */
  text: string;
  /** Structured content of the answer, when the tool gave one. */
  data?: JsonObject;
  replayed: boolean;
}

/**
 * A side-effecting call whose outcome is not known (timed out, connection lost, cancelled in flight).
 * It is never retried blindly; the reconciler resolves it by its idempotency key.
 */
export interface ToolUnknownObservation extends ObservationBase {
  status: 'unknown';
  reason: string;
}

/** What came back from a tool call. */
export type ToolObservation = ToolResultObservation | ToolUnknownObservation;

/** An output of the task. */
export interface ArtifactInput {
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: JsonObject;
}

/** One agent to hand work to: by id, or by skill (the mesh picks an agent of the delegating agent's own team, the tenant can see, that has it). */
export type DelegateTo = ({ agent: string; skill?: never } | { skill: string; agent?: never }) & {
  /** The child's first message. */
  parts: Part[];
  /** Scopes the child acts with: only those this task holds are kept (default: all of them). */
  scopes?: string[];
};

/** How a turn delegates. */
export interface DelegateOptions {
  /** Resume when every child settled (`all`, the default) or once one completed (`first`; the rest are canceled). */
  join?: DelegationJoin;
  /** Longest the task waits for its children; bounded by the task's own deadline and the platform's default. */
  timeoutMs?: number;
}

/** A child as the parent asked for it (its task id is stable: the same ask in a re-run turn is the same child). */
export interface DelegatedChild {
  step: number;
  taskId: string;
  agent?: string;
  skill?: string;
  parts: Part[];
  scopes?: string[];
}

/** How one child ended. */
export interface ChildResult {
  /** Its place in the `delegate` call that started it. */
  step: number;
  taskId: string;
  /** The agent that ran it; absent when none could (unknown agent or skill). */
  agent?: string;
  state: 'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required' | 'auth-required';
  /** Its artifacts; empty when `truncated`. */
  artifacts: ArtifactInput[];
  /**
   * Its artifacts or its message (or both) were left out: with them the results would pass the
   * platform's byte bound (`DISPATCHER_DELEGATION_RESULTS_MAX_BYTES`). Read them with GetTask on `taskId`.
   */
  truncated?: true;
  /** Its last status message. */
  message?: AgentMessage;
}

/** What the parent's next turn gets. */
export interface DelegationOutcome {
  children: ChildResult[];
  /** Steps of children canceled before they settled (deadline passed, or `first` was met). */
  unfinished: number[];
  /** Why the wait ended: every child settled, the first completed, or the deadline passed. */
  reason: 'settled' | 'first' | 'deadline';
}

/** How a turn ended; returned by the handler (built only through the context). */
export type TurnOutcome =
  | { state: 'completed'; message?: AgentMessage }
  | { state: 'delegated'; children: DelegatedChild[]; join: DelegationJoin; timeoutMs?: number; message: AgentMessage }
  | { state: 'input-required'; message: AgentMessage }
  /** The agent needs the caller to authenticate (to it or to a system it uses); the caller's next message continues the task. */
  | { state: 'auth-required'; message: AgentMessage }
  | { state: 'failed'; message: AgentMessage }
  | { state: 'rejected'; message: AgentMessage }
  | { state: 'canceled'; message: AgentMessage };

/** Outcomes after which no further turn of the task can come (every one but the interrupted `input-required` and `auth-required`). */
export const SETTLED_TURN_STATES: readonly Exclude<TurnOutcome['state'], 'input-required' | 'auth-required'>[] = [
  'completed',
  'failed',
  'rejected',
  'canceled',
];

/** What a handler can do; the runtime implements it (events, ledger, tools). */
export interface AgentContext {
  /** Calls an MCP tool through the effect ledger; an `unknown` result is reconciled before it returns, when possible. */
  callTool(intent: ToolIntent): Promise<ToolObservation>;
  /** Emits a WORKING status with a message. */
  progress(text: string): Promise<void>;
  /** Emits an artifact. */
  artifact(artifact: ArtifactInput): Promise<void>;
  /** Ends the turn asking the user for more input (INPUT_REQUIRED). */
  askForInput(question: string): TurnOutcome;
  /** Ends the task successfully. */
  complete(text?: string): TurnOutcome;
  /** Ends the task as failed. */
  fail(reason: string): TurnOutcome;
  /** Ends the task as rejected: the agent will not do it. */
  reject(reason: string): TurnOutcome;
  /**
   * Ends the turn handing work to other agents of the mesh; no worker waits for them. When they
   * settle (see DelegateOptions.join) or the wait's deadline passes, the next turn starts with
   * `task.delegation`. Throws CONTRACT_VIOLATION for an empty or oversized list.
   */
  delegate(to: DelegateTo[], options?: DelegateOptions): TurnOutcome;
}

/** A text part. */
export const text = (value: string): Part => ({ type: 'text', text: value });
/** A structured data part. */
export const data = (value: JsonValue): Part => ({ type: 'data', data: value });

/** All text parts of a message, joined by newlines. */
export function textOf(parts: Part[]): string {
  return parts
    .filter((p): p is Extract<Part, { type: 'text' }> => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

/** An agent message with one text part. */
export function agentMessage(value: string): AgentMessage {
  return { role: 'agent', parts: [text(value)] };
}

/** Outcomes as the context builds them; exported for runtimes and tests. */
export const Outcomes = {
  completed: (value?: string): TurnOutcome =>
    value === undefined ? { state: 'completed' } : { state: 'completed', message: agentMessage(value) },
  inputRequired: (question: string): TurnOutcome => ({ state: 'input-required', message: agentMessage(question) }),
  authRequired: (why: string): TurnOutcome => ({ state: 'auth-required', message: agentMessage(why) }),
  failed: (reason: string): TurnOutcome => ({ state: 'failed', message: agentMessage(reason) }),
  rejected: (reason: string): TurnOutcome => ({ state: 'rejected', message: agentMessage(reason) }),
  canceled: (reason: string): TurnOutcome => ({ state: 'canceled', message: agentMessage(reason) }),
};
