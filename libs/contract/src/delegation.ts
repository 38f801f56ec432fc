import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { MeshError } from './errors.js';
import type { JsonObject } from './json-types.js';

/*
 * Delegation through the mesh (docs/agents.md, "Delegation"): a turn may end by handing work to
 * other agents. The worker reports it in its final status event (`delegation`), the dispatcher —
 * owner of tasks — creates the children, waits for them without holding any worker, and starts the
 * parent's next turn with their outcomes (a message whose data part carries DelegationResults).
 */

/** The A2A extension served cards declare: children link to their parent through `referenceTaskIds`. */
export const DELEGATION_URI = 'https://agent-mesh.dev/extensions/delegation/v1';

/** How the served cards declare it (`capabilities.extensions`). */
export const DELEGATION_EXTENSION = {
  uri: DELEGATION_URI,
  description:
    'A task may delegate work to other agents of the mesh. Each child is a task of the same tenant whose first message ' +
    'names its parent in referenceTaskIds and metadata["mesh/parent_task_id"]; the parent stays WORKING until its ' +
    'children settle or its delegation deadline passes. CancelTask on a parent cancels every live descendant.',
  required: false,
  params: { parentMetadataKey: 'mesh/parent_task_id', rootMetadataKey: 'mesh/root_task_id' },
} as const;

/** When the parent resumes: once every child settled (`all`), or once one completed (`first`, the others are canceled). */
export type DelegationJoin = 'all' | 'first';

/** One child as the worker asks for it. `taskId` is {@link childTaskId} of the parent execution, step and ask. */
export interface DelegationChild {
  step: number;
  taskId: string;
  /** Exactly one of agentId and skill. */
  agentId?: string;
  skill?: string;
  /** The child's first message as A2A JSON parts. */
  parts: JsonObject[];
  /** Scopes the child acts with: only those the parent holds are kept. */
  scopes?: string[];
}

/** What a delegating turn asks for (the `delegation` of its final status event). */
export interface DelegationRequest {
  join: DelegationJoin;
  /** Longest the parent waits; the platform's default and the parent's own deadline bound it. */
  timeoutMs?: number;
  children: DelegationChild[];
}

/** Most children one turn may start. */
export const MAX_DELEGATION_CHILDREN = 16;

const childSchema = z
  .object({
    step: z.number().int().nonnegative(),
    taskId: z.string().min(1).max(200),
    agentId: z.string().min(1).max(63).optional(),
    skill: z.string().min(1).max(200).optional(),
    parts: z.array(z.record(z.string(), z.unknown())).min(1),
    scopes: z.array(z.string().min(1).max(200)).max(64).optional(),
  })
  .strict()
  .refine((c) => (c.agentId === undefined) !== (c.skill === undefined), { message: 'exactly one of agentId and skill' });

/** The wire shape of a DelegationRequest (checked where the event is decoded). */
export const delegationRequestSchema = z
  .object({
    join: z.enum(['all', 'first']),
    timeoutMs: z.number().int().positive().optional(),
    children: z.array(childSchema).min(1).max(MAX_DELEGATION_CHILDREN),
  })
  .strict();

/** What the worker used of the task tree's retry budget in one turn: its attempt and its tool retries. */
export interface TurnUsage {
  attempt: number;
  retries: number;
}

export const turnUsageSchema = z.object({ attempt: z.number().int().positive(), retries: z.number().int().nonnegative() }).strict();

/** How a child ended, as the parent's next turn sees it. */
export interface ChildOutcome {
  step: number;
  taskId: string;
  /** The agent that ran it (resolved from the skill when asked by skill); absent when none could. */
  agentId?: string;
  /** A2A task state (`TASK_STATE_*`); `TASK_STATE_REJECTED` when the platform refused to start it. */
  state: string;
  /** The child's artifacts as A2A JSON; empty when `truncated`. */
  artifacts: JsonObject[];
  /**
   * The child's artifacts or its message (or both) were left out: with them the results would pass
   * the platform's byte bound (`DISPATCHER_DELEGATION_RESULTS_MAX_BYTES`). GetTask `taskId` has them.
   */
  truncated?: true;
  /** The child's last status message as A2A JSON. */
  message?: JsonObject;
}

/** The outcomes a parent resumes with: settled children, and those that had not settled when it stopped waiting. */
export interface DelegationResults {
  children: ChildOutcome[];
  /** Steps of children canceled unfinished (the deadline passed, or `first` was met). */
  unfinished: number[];
  /** Why the parent stopped waiting. */
  reason: 'settled' | 'first' | 'deadline';
}

/** The metadata key of the data part that carries DelegationResults in the parent's resumed-turn message. */
export const DELEGATION_RESULTS_KEY = 'mesh/delegation_results';

/**
 * Message ids the platform writes itself (a delegated child's first message, a parent's resumed
 * turn) start with this. Dedup is per tenant, agent and messageId, so a caller's message holding
 * one first would make the platform's a duplicate: the child never starts, the parent never resumes.
 */
export const PLATFORM_MESSAGE_ID_PREFIX = 'mesh:';

/**
 * Metadata keys the platform writes and agents read as its word (DELEGATION_RESULTS_KEY, the tree's
 * links, a task's reasons): a caller's message may carry none, on the message or on a part.
 */
export const PLATFORM_METADATA_PREFIX = 'mesh/';

/** The field of a caller's message that uses a name the platform reserves, and why; undefined when none does. */
export function reservedNameIn(message: {
  messageId?: string;
  metadata?: unknown;
  parts?: ReadonlyArray<{ metadata?: unknown }>;
}): { field: string; problem: string } | undefined {
  if (message.messageId?.startsWith(PLATFORM_MESSAGE_ID_PREFIX))
    return {
      field: 'message.messageId',
      problem: `must not start with "${PLATFORM_MESSAGE_ID_PREFIX}" (reserved for the platform's messages)`,
    };
  const reservedKey = (meta: unknown) =>
    meta !== null && typeof meta === 'object' ? Object.keys(meta).find((k) => k.startsWith(PLATFORM_METADATA_PREFIX)) : undefined;
  const onMessage = reservedKey(message.metadata);
  if (onMessage !== undefined)
    return {
      field: `message.metadata["${onMessage}"]`,
      problem: `keys starting with "${PLATFORM_METADATA_PREFIX}" are reserved for the platform`,
    };
  for (const [i, part] of (message.parts ?? []).entries()) {
    const key = reservedKey(part.metadata);
    if (key !== undefined)
      return {
        field: `message.parts[${i}].metadata["${key}"]`,
        problem: `keys starting with "${PLATFORM_METADATA_PREFIX}" are reserved for the platform`,
      };
  }
  return undefined;
}

/**
 * The child's task id: a UUID-shaped SHA-256 of the parent's execution id, the step and the ask
 * (target and parts). A re-run or redelivered parent turn asks for the same child, never a second one.
 */
export function childTaskId(parentExecutionId: string, step: number, ask: { agentId?: string; skill?: string; parts: unknown }): string {
  if (!Number.isInteger(step) || step < 0) throw new MeshError('CONTRACT_VIOLATION', `step must be a non-negative integer, got ${step}`);
  const h = createHash('sha256')
    .update(canonicalJson({ parent: parentExecutionId, step, agent: ask.agentId ?? null, skill: ask.skill ?? null, parts: ask.parts }))
    .digest('hex');
  // Version nibble 8 (a name-based id of our own), variant 10xx.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The actor chain of RFC 8693 (`act`, nested): the current actor first, the one it acts for inside.
 * A child's chain is its parent's with the delegating agent in front.
 */
export interface ActorClaim {
  sub: string;
  act?: ActorClaim;
}

/** Longest actor chain a task may carry (a loop of delegations stops here). */
export const MAX_ACTOR_CHAIN = 8;

/** The chain with `actor` acting for `chain` (undefined: the original caller's actor). */
export function actFor(actor: string, chain: ActorClaim | undefined): ActorClaim {
  return chain ? { sub: actor, act: chain } : { sub: actor };
}

/** Depth of an actor chain. */
export function actorChainDepth(chain: ActorClaim | undefined): number {
  let n = 0;
  for (let c = chain; c; c = c.act) n++;
  return n;
}

const actorClaimSchema: z.ZodType<ActorClaim> = z.lazy(() =>
  z.object({ sub: z.string().min(1).max(300), act: actorClaimSchema.optional() }).strict(),
);

/** Parses the `act` header (JSON of an ActorClaim); throws DECODE_FAILED when malformed or deeper than {@link MAX_ACTOR_CHAIN}. */
export function parseActorClaim(raw: string): ActorClaim {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (cause) {
    throw new MeshError('DECODE_FAILED', 'act header is not JSON', { cause });
  }
  const parsed = actorClaimSchema.safeParse(json);
  if (!parsed.success) throw new MeshError('DECODE_FAILED', `invalid act header: ${parsed.error.issues[0]?.message ?? 'shape'}`);
  if (actorChainDepth(parsed.data) > MAX_ACTOR_CHAIN) throw new MeshError('DECODE_FAILED', `act chain deeper than ${MAX_ACTOR_CHAIN}`);
  return parsed.data;
}

/** The scope a holder of every scope carries (development API keys). */
export const ALL_SCOPES = '*';

/**
 * Scopes narrow only: the requested ones the holder has — any, for a holder of every scope (`*`) —
 * or all the holder's when none are requested.
 */
export function narrowScopes(held: readonly string[], requested: readonly string[] | undefined): string[] {
  if (requested === undefined) return [...held];
  const have = new Set(held);
  return [...new Set(requested)].filter((s) => have.has(s) || have.has(ALL_SCOPES));
}
