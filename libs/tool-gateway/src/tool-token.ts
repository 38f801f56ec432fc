import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, type JWTPayload } from 'jose';
import type { ActorClaim } from '@mesh/contract';

/** Who a call token is minted for: the task's tenant and subject, and (delegated work) its actor chain and scopes. */
export interface CallTokenClaims {
  audience: string;
  tenant: string;
  subject: string;
  taskId: string;
  /** RFC 8693 `act`: the agents acting, innermost the original caller's actor. */
  act?: ActorClaim;
  /** RFC 8693 `scope` (space-separated): what the task may do. */
  scopes?: string[];
}

/** Mints short-lived tokens bound to one tool server's audience; never forwards the caller's own token. */
export interface ToolTokenMinter {
  /** A token for one tool call: the tenant and subject the call acts for. */
  mint(claims: CallTokenClaims): Promise<string>;
  /** A token that only opens a connection (MCP session) to the server: the worker as subject, no tenant. */
  mintConnection(claims: { audience: string; subject: string }): Promise<string>;
}

/** Who a verified tool token speaks for; `tenant` is absent on a connection token. */
export interface ToolTokenClaims {
  subject: string;
  tenant?: string;
  act?: ActorClaim;
  scopes?: string[];
}

/** HS256 minter with a secret shared between the worker and the tool servers that want tokens. */
export class HmacToolTokenMinter implements ToolTokenMinter {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly issuer = 'agent-mesh-agents',
    private readonly ttlSeconds = 60,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  mint(c: CallTokenClaims): Promise<string> {
    return this.sign(
      {
        tenant: c.tenant,
        task_id: c.taskId,
        ...(c.act ? { act: c.act } : {}),
        ...(c.scopes ? { scope: c.scopes.join(' ') } : {}),
      },
      c.audience,
      c.subject,
    );
  }

  mintConnection(c: { audience: string; subject: string }): Promise<string> {
    return this.sign({}, c.audience, c.subject);
  }

  private sign(claims: JWTPayload, audience: string, subject: string): Promise<string> {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(this.issuer)
      .setAudience(audience)
      .setSubject(subject)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
  }
}

/**
 * Tool-server side: verifies a token minted by HmacToolTokenMinter for `audience` (signature,
 * issuer, audience, expiry). A token without a tenant is a connection token: it opens a session
 * but names nobody a tool may act for.
 */
export async function verifyToolTokenClaims(
  token: string,
  secret: string,
  audience: string,
  issuer = 'agent-mesh-agents',
): Promise<ToolTokenClaims> {
  const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), { audience, issuer, algorithms: ['HS256'] });
  if (typeof payload.sub !== 'string' || payload.sub === '') throw new Error('token lacks a subject');
  if (payload.tenant === undefined) return { subject: payload.sub };
  if (typeof payload.tenant !== 'string' || payload.tenant === '') throw new Error('token has an invalid tenant');
  return {
    tenant: payload.tenant,
    subject: payload.sub,
    ...(isActorClaim(payload.act) ? { act: payload.act } : {}),
    ...(typeof payload.scope === 'string' ? { scopes: payload.scope.split(' ').filter((x) => x !== '') } : {}),
  };
}

/** Like verifyToolTokenClaims, for a call token: refuses a token that names no tenant. */
export async function verifyToolToken(
  token: string,
  secret: string,
  audience: string,
  issuer = 'agent-mesh-agents',
): Promise<ToolTokenClaims & { tenant: string }> {
  const claims = await verifyToolTokenClaims(token, secret, audience, issuer);
  if (claims.tenant === undefined) throw new Error('token lacks tenant or subject');
  return { ...claims, tenant: claims.tenant };
}

function isActorClaim(v: unknown): v is ActorClaim {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as { sub?: unknown; act?: unknown };
  return typeof c.sub === 'string' && (c.act === undefined || isActorClaim(c.act));
}
