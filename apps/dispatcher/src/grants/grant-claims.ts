import { randomUUID } from 'node:crypto';
import { agentActor, ToolGrants, type ActorClaim, type GrantClaims, type Identity } from '@mesh/contract';

/** When and for how long: times in ms since the epoch. */
export interface GrantTiming {
  nowMs: number;
  ttlMs: number;
}

/**
 * The grant of a run command: the task's identity, valid until the task's deadline or `ttlMs`,
 * whichever comes first. `act` is the chain the task carries, or its caller's actor alone.
 */
export function grantClaims(identity: Identity, issuer: string, audience: string, t: GrantTiming): GrantClaims {
  const endMs = identity.deadlineUnixMs !== undefined ? Math.min(identity.deadlineUnixMs, t.nowMs + t.ttlMs) : t.nowMs + t.ttlMs;
  return {
    iss: issuer,
    aud: audience,
    sub: identity.subject,
    tenant: identity.tenant,
    act: identity.act ?? { sub: identity.actor },
    agent_id: identity.agentId,
    task_id: identity.taskId,
    execution_id: identity.executionId,
    ...(identity.scopes && identity.scopes.length > 0 ? { scope: identity.scopes.join(' ') } : {}),
    jti: randomUUID(),
    iat: Math.floor(t.nowMs / 1000),
    exp: Math.floor(endMs / 1000),
  };
}

/** What an exchange issues: a call token (tenant, subject, task) or a connection token (the agent only). */
export type IssuedKind = 'call' | 'connection';

/**
 * The claims of a token issued for `grant` and one `resource`: RFC 9068 claims plus the task's, the
 * agent added as the outermost actor. A connection token names the agent as subject and no tenant.
 * Lives {@link ToolGrants.accessTokenTtlS} at most, never past its grant.
 */
export function issuedClaims(grant: GrantClaims, resource: string, kind: IssuedKind, nowMs: number): Record<string, unknown> {
  const iat = Math.floor(nowMs / 1000);
  const common = {
    iss: grant.iss,
    aud: resource,
    agent_id: grant.agent_id,
    grant_jti: grant.jti,
    client_id: agentActor(grant.agent_id),
    jti: randomUUID(),
    iat,
    exp: Math.min(iat + ToolGrants.accessTokenTtlS, grant.exp),
  };
  if (kind === 'connection') return { ...common, sub: agentActor(grant.agent_id) };
  const act: ActorClaim = { sub: agentActor(grant.agent_id), act: grant.act };
  return {
    ...common,
    sub: grant.sub,
    tenant: grant.tenant,
    act,
    task_id: grant.task_id,
    execution_id: grant.execution_id,
    ...(grant.scope ? { scope: grant.scope } : {}),
  };
}
