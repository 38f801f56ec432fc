import { randomUUID } from 'node:crypto';
import { MeshError } from './errors.js';

/** A new random id (UUID v4) for tasks, contexts and messages. */
export function newId(): string {
  return randomUUID();
}

const TENANT_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Tenants are lower-case slugs: they appear in keys and ids joined by `:` so `:` is never allowed. */
export function assertTenant(tenant: string): string {
  if (!TENANT_RE.test(tenant)) {
    throw new MeshError('CONTRACT_VIOLATION', `invalid tenant "${tenant}": expected ${TENANT_RE}`);
  }
  return tenant;
}

const AGENT_ID_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** True for a valid agent id (a slug usable in topic names and URLs). */
export function isAgentId(id: string): boolean {
  return AGENT_ID_RE.test(id);
}

/** A stable agent id derived from a card name: lower-case, dashes, at most 63 characters. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/g, '');
  return slug.length > 0 ? slug : 'agent';
}

/**
 * The number of a task's first turn: the dispatcher numbers turns from 1 (a follow-up message to
 * an interrupted task is turn 2, …); execution ids carry it. No turn before it has history.
 */
export const FIRST_TURN = 1;

/**
 * Execution id of one turn of a task (docs/contract.md §4.3): derived from the task side, never from
 * the transport, so every redelivery of the same command carries the same id.
 */
export function executionId(tenant: string, taskId: string, turn: number): string {
  if (!Number.isInteger(turn) || turn < 0) {
    throw new MeshError('CONTRACT_VIOLATION', `turn must be a non-negative integer, got ${turn}`);
  }
  return `${assertTenant(tenant)}:${taskId}:${turn}`;
}

/** Idempotency key of a side-effecting tool call: `{tenant}:{task_id}:{tool}:{args_hash}`. */
export function idempotencyKey(tenant: string, taskId: string, tool: string, argsHashHex: string): string {
  return `${assertTenant(tenant)}:${taskId}:${tool}:${argsHashHex}`;
}
