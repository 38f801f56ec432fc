import { randomUUID } from 'node:crypto';
import { SignJWT, createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ToolGrants, type ActorClaim } from '@mesh/contract';

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
  /** The run command's grant (GrantExchangeMinter exchanges it; HmacToolTokenMinter ignores it). */
  grant?: string;
}

/** What a connection token is minted for; `grant`: a current grant of the agent (see GrantExchangeMinter). */
export interface ConnectionTokenClaims {
  audience: string;
  subject: string;
  grant?: string;
}

/** Mints short-lived tokens bound to one tool server's audience; never forwards the caller's own token. */
export interface ToolTokenMinter {
  /** A token for one tool call: the tenant and subject the call acts for. */
  mint(claims: CallTokenClaims): Promise<string>;
  /** A token that only opens a connection (MCP session) to the server: the worker as subject, no tenant. */
  mintConnection(claims: ConnectionTokenClaims): Promise<string>;
}

/** Who a verified tool token speaks for; `tenant` is absent on a connection token. */
export interface ToolTokenClaims {
  subject: string;
  tenant?: string;
  act?: ActorClaim;
  scopes?: string[];
  /** The task and agent the token was issued for (tokens from the dispatcher's token endpoint). */
  taskId?: string;
  agentId?: string;
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

  mintConnection(c: ConnectionTokenClaims): Promise<string> {
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
  return claimsOf(payload);
}

/** Subject, tenant (absent: a connection token), actor chain, scopes and task of a verified payload. */
function claimsOf(payload: JWTPayload): ToolTokenClaims {
  if (typeof payload.sub !== 'string' || payload.sub === '') throw new Error('token lacks a subject');
  if (payload.tenant === undefined) return { subject: payload.sub };
  if (typeof payload.tenant !== 'string' || payload.tenant === '') throw new Error('token has an invalid tenant');
  return {
    tenant: payload.tenant,
    subject: payload.sub,
    ...(isActorClaim(payload.act) ? { act: payload.act } : {}),
    ...(typeof payload.scope === 'string' ? { scopes: payload.scope.split(' ').filter((x) => x !== '') } : {}),
    ...(typeof payload.task_id === 'string' ? { taskId: payload.task_id } : {}),
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

/** Verifies tool tokens for one audience: any token (a session's bearer), or a call token (names a tenant). */
export interface ToolTokenVerifier {
  readonly audience: string;
  /** A connection or call token; throws when it does not verify. */
  claims(token: string): Promise<ToolTokenClaims>;
  /** A call token: refuses one that names no tenant. */
  call(token: string): Promise<ToolTokenClaims & { tenant: string }>;
}

function verifierOf(audience: string, claims: (token: string) => Promise<ToolTokenClaims>): ToolTokenVerifier {
  return {
    audience,
    claims,
    async call(token) {
      const c = await claims(token);
      if (c.tenant === undefined) throw new Error('token lacks tenant or subject');
      return { ...c, tenant: c.tenant };
    },
  };
}

/** The HS256 verifier of tokens minted with a shared secret (HmacToolTokenMinter). */
export function hmacToolTokenVerifier(secret: string, audience: string, issuer = 'agent-mesh-agents'): ToolTokenVerifier {
  return verifierOf(audience, (token) => verifyToolTokenClaims(token, secret, audience, issuer));
}

/** Where a tool server finds the dispatcher's keys, and what it expects of a token. */
export interface JwksToolTokenOptions {
  /** The dispatcher's `/.well-known/jwks.json` (fetched on first use, cached, refetched for an unknown `kid`). */
  jwksUrl: string | URL;
  /** The dispatcher's issuer (DISPATCHER_ISSUER). */
  issuer: string;
  /** This server's audience: exactly the `resource` the worker asked for. */
  audience: string;
  /** The key set itself (tests); defaults to the remote set at `jwksUrl`. */
  keys?: JWTVerifyGetKey;
}

/**
 * Tool-server side of the grant exchange: verifies tokens the dispatcher's token endpoint issued
 * (signature by a key of its JWKS, `typ` at+jwt — a grant is never accepted —, issuer, exactly this
 * audience, expiry). A token without a tenant is a connection token: it opens a session only.
 */
export function createToolTokenVerifier(o: JwksToolTokenOptions): ToolTokenVerifier {
  const keys = o.keys ?? createRemoteJWKSet(new URL(o.jwksUrl));
  return verifierOf(o.audience, async (token) => {
    const { payload } = await jwtVerify(token, keys, {
      issuer: o.issuer,
      audience: o.audience,
      algorithms: ['EdDSA', 'ES256'],
      typ: ToolGrants.accessTokenTyp,
      requiredClaims: ['sub', 'exp', 'jti'],
    });
    // One audience only: a token that names more servers is good at none of them.
    if (Array.isArray(payload.aud) && payload.aud.length !== 1) throw new Error('token names more than one audience');
    return { ...claimsOf(payload), ...(typeof payload.agent_id === 'string' ? { agentId: payload.agent_id } : {}) };
  });
}

/** The first of `verifiers` that accepts a token (a server moving from the shared secret to the JWKS accepts both). */
export function anyToolTokenVerifier(verifiers: readonly ToolTokenVerifier[]): ToolTokenVerifier {
  if (verifiers.length === 0) throw new Error('at least one tool token verifier is required');
  return verifierOf(verifiers[0].audience, async (token) => {
    let last: unknown;
    for (const v of verifiers) {
      try {
        return await v.claims(token);
      } catch (err) {
        last = err;
      }
    }
    throw last;
  });
}
