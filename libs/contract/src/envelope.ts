import { z } from 'zod';
import { MeshError } from './errors.js';
import { Headers, REQUIRED_HEADERS } from './headers.js';
import { TASK_STATES, type TaskState } from './task-state.js';
import type { JsonObject } from './json-types.js';
import {
  delegationRequestSchema,
  parseActorClaim,
  turnUsageSchema,
  type ActorClaim,
  type DelegationRequest,
  type TurnUsage,
} from './delegation.js';

/** Version of the envelope body schema; bumped on incompatible changes. */
export const SCHEMA_VERSION = 1;

/** Who and what a message is about: travels as Kafka headers (docs/contract.md §4.1). */
export interface Identity {
  tenant: string;
  agentId: string;
  taskId: string;
  contextId: string;
  messageId: string;
  executionId: string;
  /** End user the work is done on behalf of. */
  subject: string;
  /** Calling client or agent. */
  actor: string;
  deadlineUnixMs?: number;
  /**
   * On a run command: the turn is not started after this time (the dispatcher fails turns no worker
   * started by then, so a late start would contradict it). A header, so older workers ignore it.
   */
  startByUnixMs?: number;
  /** The delegating task, on a task another task delegated (docs/agents.md, "Delegation"). */
  parentTaskId?: string;
  /** The root of the task tree, on every task of a tree (the root's own commands included). */
  rootTaskId?: string;
  /** RFC 8693 actor chain: `actor` acting for the chain inside; absent when the caller acts alone. */
  act?: ActorClaim;
  /** Scopes the task acts with (absent: the caller's, not carried). */
  scopes?: string[];
  /** On a run command of a task tree: retries the tree has left; the worker's own budget is bounded by it. */
  retryBudget?: number;
  /** W3C trace context: observability data, never authority. */
  traceparent?: string;
  tracestate?: string;
}

/** Dispatcher → worker: run one turn of a task. `message` is the A2A message as JSON. */
export interface TaskRunCommand {
  kind: 'task.run';
  identity: Identity;
  body: { turn: number; message: JsonObject };
  /**
   * The dispatcher's signed grant for this turn (a JWT, docs/agents.md "Tool tokens"): what the worker
   * exchanges for tool tokens. A header of the run command only, so events never echo it; absent on
   * commands of older dispatchers.
   */
  grant?: string;
}

/** Dispatcher → worker: stop a task (skip it if not started, abort it if running). */
export interface TaskCancelCommand {
  kind: 'task.cancel';
  identity: Identity;
  body: { reason?: string };
}

/** Worker → dispatcher: a task status change; `seq` orders events of one execution. */
export interface TaskStatusEvent {
  kind: 'task.status';
  identity: Identity;
  body: {
    seq: number;
    state: TaskState;
    message?: JsonObject;
    final: boolean;
    /** On the final event of a turn that delegates (state WORKING): the children it asks for. */
    delegation?: DelegationRequest;
    /** On a final event: the attempt that ran the turn and its tool retries (the tree's budget counts them). */
    usage?: TurnUsage;
  };
}

/** Worker → dispatcher: an artifact of a task. */
export interface TaskArtifactEvent {
  kind: 'task.artifact';
  identity: Identity;
  body: { seq: number; artifact: JsonObject; append?: boolean; lastChunk?: boolean };
}

export type Envelope = TaskRunCommand | TaskCancelCommand | TaskStatusEvent | TaskArtifactEvent;
export type EnvelopeKind = Envelope['kind'];
export type Command = TaskRunCommand | TaskCancelCommand;
export type TaskEvent = TaskStatusEvent | TaskArtifactEvent;

/** Exhaustiveness guard for switches over envelope kinds. */
export function assertUnreachable(x: never): never {
  throw new MeshError('CONTRACT_VIOLATION', `unhandled envelope ${JSON.stringify(x)}`);
}

/** Factories keep construction in one place. */
export const Envelopes = {
  run: (identity: Identity, body: TaskRunCommand['body'], grant?: string): TaskRunCommand =>
    grant ? { kind: 'task.run', identity, body, grant } : { kind: 'task.run', identity, body },
  cancel: (identity: Identity, body: TaskCancelCommand['body'] = {}): TaskCancelCommand => ({
    kind: 'task.cancel',
    identity,
    body,
  }),
  status: (identity: Identity, body: TaskStatusEvent['body']): TaskStatusEvent => ({ kind: 'task.status', identity, body }),
  artifact: (identity: Identity, body: TaskArtifactEvent['body']): TaskArtifactEvent => ({
    kind: 'task.artifact',
    identity,
    body,
  }),
};

const jsonObject = z.record(z.string(), z.unknown());
const bodySchemas = {
  'task.run': z.object({ turn: z.number().int().nonnegative(), message: jsonObject }).strict(),
  'task.cancel': z.object({ reason: z.string().max(1000).optional() }).strict(),
  'task.status': z
    .object({
      seq: z.number().int().nonnegative(),
      // Exactly the wire spelling: an unknown state is a malformed event (dead letter), not a guess.
      state: z.enum(TASK_STATES as [TaskState, ...TaskState[]]),
      message: jsonObject.optional(),
      final: z.boolean(),
      delegation: delegationRequestSchema.optional(),
      usage: turnUsageSchema.optional(),
    })
    .strict(),
  'task.artifact': z
    .object({
      seq: z.number().int().nonnegative(),
      artifact: jsonObject,
      append: z.boolean().optional(),
      lastChunk: z.boolean().optional(),
    })
    .strict(),
} satisfies Record<EnvelopeKind, z.ZodType>;

/** A message as it sits on Kafka, independent of the client library. */
export interface WireMessage {
  headers: Record<string, string>;
  value: Buffer;
}

/** Envelope → Kafka headers and value. */
export function encodeEnvelope(env: Envelope): WireMessage {
  const id = env.identity;
  const headers: Record<string, string> = {
    [Headers.tenant]: id.tenant,
    [Headers.agentId]: id.agentId,
    [Headers.taskId]: id.taskId,
    [Headers.contextId]: id.contextId,
    [Headers.messageId]: id.messageId,
    [Headers.executionId]: id.executionId,
    [Headers.subject]: id.subject,
    [Headers.actor]: id.actor,
    [Headers.kind]: env.kind,
    [Headers.schemaVersion]: String(SCHEMA_VERSION),
  };
  if (id.deadlineUnixMs !== undefined) headers[Headers.deadlineUnixMs] = String(id.deadlineUnixMs);
  if (id.startByUnixMs !== undefined) headers[Headers.startByUnixMs] = String(id.startByUnixMs);
  if (id.parentTaskId) headers[Headers.parentTaskId] = id.parentTaskId;
  if (id.rootTaskId) headers[Headers.rootTaskId] = id.rootTaskId;
  if (id.act) headers[Headers.act] = JSON.stringify(id.act);
  if (id.scopes) headers[Headers.scope] = id.scopes.join(' ');
  if (id.retryBudget !== undefined) headers[Headers.retryBudget] = String(id.retryBudget);
  if (id.traceparent) headers[Headers.traceparent] = id.traceparent;
  if (id.tracestate) headers[Headers.tracestate] = id.tracestate;
  if (env.kind === 'task.run' && env.grant) headers[Headers.grant] = env.grant;
  return { headers, value: Buffer.from(JSON.stringify(env.body), 'utf8') };
}

/** Kafka headers as kafkajs delivers them (Buffer, string, arrays or undefined) → plain strings. */
export function normalizeHeaders(raw: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw ?? {})) {
    const first = Array.isArray(v) ? v[0] : v;
    if (first === undefined || first === null) continue;
    out[k] = Buffer.isBuffer(first) ? first.toString('utf8') : String(first);
  }
  return out;
}

/** An optional numeric header (a time in ms since the epoch, a count): absent, or a non-negative integer. */
function nonNegativeIntHeader(h: Record<string, string>, name: string): number | undefined {
  if (h[name] === undefined) return undefined;
  const ms = Number(h[name]);
  if (!Number.isSafeInteger(ms) || ms < 0) throw new MeshError('DECODE_FAILED', `invalid ${name} "${h[name]}"`);
  return ms;
}

/**
 * Kafka headers and value → Envelope. Anything missing or malformed is a DECODE_FAILED error
 * naming the problem: such a message goes to the dead-letter topic, never to a handler.
 */
export function decodeEnvelope(msg: { headers: Record<string, unknown> | undefined; value: Buffer | null }): Envelope {
  const h = normalizeHeaders(msg.headers);
  const missing = REQUIRED_HEADERS.filter((name) => !h[name]);
  if (missing.length > 0) throw new MeshError('DECODE_FAILED', `missing headers: ${missing.join(', ')}`);
  if (h[Headers.schemaVersion] !== String(SCHEMA_VERSION)) {
    throw new MeshError('DECODE_FAILED', `unsupported schema_version ${h[Headers.schemaVersion]}`);
  }
  const kind = h[Headers.kind] as EnvelopeKind;
  const schema = bodySchemas[kind];
  if (!schema) throw new MeshError('DECODE_FAILED', `unknown kind "${h[Headers.kind]}"`);
  const deadlineUnixMs = nonNegativeIntHeader(h, Headers.deadlineUnixMs);
  const startByUnixMs = nonNegativeIntHeader(h, Headers.startByUnixMs);
  const retryBudget = nonNegativeIntHeader(h, Headers.retryBudget);
  const act = h[Headers.act] ? parseActorClaim(h[Headers.act]) : undefined;
  if (!msg.value) throw new MeshError('DECODE_FAILED', 'empty message value');
  let json: unknown;
  try {
    json = JSON.parse(msg.value.toString('utf8'));
  } catch (cause) {
    throw new MeshError('DECODE_FAILED', 'message value is not JSON', { cause });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
    throw new MeshError('DECODE_FAILED', `invalid ${kind} body: ${issues}`);
  }
  const identity: Identity = {
    tenant: h[Headers.tenant],
    agentId: h[Headers.agentId],
    taskId: h[Headers.taskId],
    contextId: h[Headers.contextId],
    messageId: h[Headers.messageId],
    executionId: h[Headers.executionId],
    subject: h[Headers.subject],
    actor: h[Headers.actor],
    ...(deadlineUnixMs !== undefined ? { deadlineUnixMs } : {}),
    ...(startByUnixMs !== undefined ? { startByUnixMs } : {}),
    ...(h[Headers.parentTaskId] ? { parentTaskId: h[Headers.parentTaskId] } : {}),
    ...(h[Headers.rootTaskId] ? { rootTaskId: h[Headers.rootTaskId] } : {}),
    ...(act ? { act } : {}),
    ...(h[Headers.scope] !== undefined ? { scopes: h[Headers.scope].split(' ').filter((s) => s !== '') } : {}),
    ...(retryBudget !== undefined ? { retryBudget } : {}),
    ...(h[Headers.traceparent] ? { traceparent: h[Headers.traceparent] } : {}),
    ...(h[Headers.tracestate] ? { tracestate: h[Headers.tracestate] } : {}),
  };
  if (kind === 'task.run') {
    // The execution id is derived from the task side (docs/contract.md §4.3); a command whose id does not
    // match its own tenant, task and turn would let the execution ledger confuse two tasks.
    const expected = `${identity.tenant}:${identity.taskId}:${(parsed.data as TaskRunCommand['body']).turn}`;
    if (identity.executionId !== expected) {
      throw new MeshError(
        'DECODE_FAILED',
        `execution_id "${identity.executionId}" does not match {tenant}:{task_id}:{turn} = "${expected}"`,
      );
    }
  }
  // Only a run command carries a grant; one on any other kind is ignored, never passed on.
  const grant = kind === 'task.run' && h[Headers.grant] ? { grant: h[Headers.grant] } : {};
  return { kind, identity, body: parsed.data, ...grant } as Envelope;
}
