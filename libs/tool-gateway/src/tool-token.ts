import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';

/** Mints short-lived tokens bound to one tool server's audience; never forwards the caller's own token. */
export interface ToolTokenMinter {
  /** A token for one tool call: the tenant and subject the call acts for. */
  mint(claims: { audience: string; tenant: string; subject: string; taskId: string }): Promise<string>;
  /** A token that only opens a connection (MCP session) to the server: the worker as subject, no tenant. */
  mintConnection(claims: { audience: string; subject: string }): Promise<string>;
}

/** Who a verified tool token speaks for; `tenant` is absent on a connection token. */
export interface ToolTokenClaims {
  subject: string;
  tenant?: string;
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

  mint(c: { audience: string; tenant: string; subject: string; taskId: string }): Promise<string> {
    return this.sign({ tenant: c.tenant, task_id: c.taskId }, c.audience, c.subject);
  }

  mintConnection(c: { audience: string; subject: string }): Promise<string> {
    return this.sign({}, c.audience, c.subject);
  }

  private sign(claims: Record<string, string>, audience: string, subject: string): Promise<string> {
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
  return { tenant: payload.tenant, subject: payload.sub };
}

/** Like verifyToolTokenClaims, for a call token: refuses a token that names no tenant. */
export async function verifyToolToken(
  token: string,
  secret: string,
  audience: string,
  issuer = 'agent-mesh-agents',
): Promise<{ tenant: string; subject: string }> {
  const claims = await verifyToolTokenClaims(token, secret, audience, issuer);
  if (claims.tenant === undefined) throw new Error('token lacks tenant or subject');
  return { tenant: claims.tenant, subject: claims.subject };
}
