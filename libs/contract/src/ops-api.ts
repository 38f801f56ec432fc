/**
 * The agents runtime's operator API (`/ops/*`, bearer AGENTS_OPS_TOKEN): what the runtime answers
 * and what the `mesh` CLI and console read, defined once so the two cannot drift apart.
 */

/** What `GET /ops/tasks?state=` accepts: a turn running now, or the outcome of a task's latest turn. */
export const LEDGER_TASK_STATES = [
  'running',
  'completed',
  'input-required',
  'auth-required',
  'delegated',
  'failed',
  'canceled',
  'rejected',
] as const;
export type LedgerTaskState = (typeof LEDGER_TASK_STATES)[number];
export const isLedgerTaskState = (v: unknown): v is LedgerTaskState => (LEDGER_TASK_STATES as readonly unknown[]).includes(v);

/** The largest `limit` of `GET /ops/tasks` (default 50). */
export const OPS_TASKS_MAX_LIMIT = 500;

/** How `POST /ops/unknowns/:key/resolve` settles an unknown outcome: it happened (with a text), or it never did. */
export const UNKNOWN_RESOLUTIONS = ['ok', 'error', 'absent'] as const;
export type UnknownResolution = (typeof UNKNOWN_RESOLUTIONS)[number];
export const isUnknownResolution = (v: unknown): v is UnknownResolution => (UNKNOWN_RESOLUTIONS as readonly unknown[]).includes(v);

/** One agent's command consumer in this worker process (`GET /ops/workers`). */
export interface OpsWorker {
  agentId: string;
  groupId: string;
  topic: string;
  /** Turns the agent is running now. */
  turnsInFlight: number;
  inFlight: number;
  buffered: number;
  pausedPartitions: number;
  assignedPartitions: number;
  inFlightByTenant: Record<string, number>;
  processed: number;
  deadLettered: number;
  skippedFinished: number;
}

/** `GET /ops/workers`. */
export interface OpsWorkers {
  workerId: string;
  /** Host name of the process's machine or pod. */
  host: string;
  agents: OpsWorker[];
}

/** Lag of one agent's consumer group, summed and per partition. */
export interface AgentLag {
  agentId: string;
  groupId: string;
  topic: string;
  lag: number;
  partitions: Array<{ partition: number; lag: number; committed: string | null; highWatermark: string }>;
}

/** `GET /ops/lag`. */
export interface OpsLag {
  agents: AgentLag[];
}

/** An open unknown outcome: a side effect whose call got no answer, waiting for reconciliation. */
export interface OpsUnknown {
  key: string;
  tenant: string;
  taskId: string;
  executionId: string;
  tool: string;
  reason: string | null;
  attempts: number;
}

/** `GET /ops/unknowns` (oldest first). */
export interface OpsUnknowns {
  unknowns: OpsUnknown[];
}

/** `POST /ops/unknowns/:key/resolve`. */
export interface OpsResolved {
  key: string;
  state: UnknownResolution;
}

/** A task as the agents' ledgers know it: its latest turn. */
export interface LedgerTask {
  tenant: string;
  agentId: string;
  taskId: string;
  contextId: string;
  turn: number;
  /** `running` while a turn runs, else the turn's outcome (`completed`, `input-required`, `failed`…). */
  state: string;
  updatedAt: string;
  /** The text of the latest turn's reply: for a `failed` turn, why it failed; null while running or without text. */
  message: string | null;
}

/** `GET /ops/tasks` (newest first). */
export interface OpsTasks {
  tasks: LedgerTask[];
}

/** One execution (turn) of a task and its attempts: `attempt` counts takeovers after a lost lease. */
export interface ExecutionRecord {
  executionId: string;
  turn: number;
  state: string;
  finalState: string | null;
  attempt: number;
  owner: string;
  canceled: boolean;
  traceId: string | null;
  traceparent: string | null;
  createdAt: string;
  finishedAt: string | null;
}

/** One tool call of a task in the effect ledger. */
export interface EffectRecord {
  key: string;
  executionId: string;
  tool: string;
  sideEffect: boolean;
  state: string;
  reason: string | null;
  attempts: number;
  result: string | null;
  updatedAt: string;
}

/** `GET /ops/tasks/:taskId`: the task's executions with their attempts, and its tool calls. */
export interface OpsTaskDetail {
  tenant: string;
  agentId: string;
  taskId: string;
  executions: ExecutionRecord[];
  effects: EffectRecord[];
}
