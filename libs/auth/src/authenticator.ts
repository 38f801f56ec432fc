import { timingSafeEqual, createHash } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey, type JSONWebKeySet } from 'jose';
import { MeshError, assertTenant, bearerToken } from '@mesh/contract';
import type { Principal } from './principal.js';

/** A static development API key and the principal it stands for. */
export interface ApiKeyGrant {
  key: string;
  tenant: string;
  subject: string;
  actor?: string;
  scopes?: string[];
}

export interface JwtOptions {
  issuer: string;
  audience: string;
  /** Inline JWKS (tests, air-gapped installs) … */
  jwks?: JSONWebKeySet;
  /** … or a JWKS URL fetched and cached by jose. */
  jwksUrl?: string;
  /** Accepted signing algorithms; `none` is never accepted. */
  algorithms?: string[];
  clockToleranceSec?: number;
}

export interface AuthenticatorOptions {
  apiKeys?: ApiKeyGrant[];
  jwt?: JwtOptions;
}

/** Authentication failed: edges answer 401 with a generic message, details go to logs only. */
export class AuthError extends MeshError {
  constructor(message: string, cause?: unknown) {
    super('UNAUTHENTICATED', message, { cause });
    this.name = 'AuthError';
  }
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * Turns an `Authorization` header into a Principal: `Bearer <jwt>` verified with jose
 * (issuer, audience, expiry, not-before, signature), or `Bearer <api key>` compared in
 * constant time against configured development keys.
 */
export class Authenticator {
  private readonly keys: Array<{ digest: Buffer; grant: ApiKeyGrant }>;
  private readonly getKey?: JWTVerifyGetKey;

  constructor(private readonly opts: AuthenticatorOptions) {
    this.keys = (opts.apiKeys ?? []).map((grant) => ({ digest: digest(grant.key), grant }));
    if (opts.jwt?.jwks) this.getKey = createLocalJWKSet(opts.jwt.jwks);
    else if (opts.jwt?.jwksUrl) this.getKey = createRemoteJWKSet(new URL(opts.jwt.jwksUrl));
  }

  async authenticate(authorization: string | string[] | undefined): Promise<Principal> {
    if (Array.isArray(authorization)) throw new AuthError('more than one Authorization header');
    const token = bearerToken(authorization);
    if (!token) throw new AuthError('missing or malformed Authorization: Bearer <token>');
    if (token.split('.').length === 3) return this.verifyJwt(token);
    return this.matchApiKey(token);
  }

  private matchApiKey(token: string): Principal {
    // Hashing first gives equal-length buffers, so timingSafeEqual never leaks length; every
    // key is compared so timing does not reveal which one matched.
    const d = digest(token);
    let found: ApiKeyGrant | undefined;
    for (const k of this.keys) if (timingSafeEqual(d, k.digest)) found = k.grant;
    if (!found) throw new AuthError('unknown API key');
    return { tenant: found.tenant, subject: found.subject, actor: found.actor ?? `apikey:${found.subject}`, scopes: found.scopes ?? ['*'] };
  }

  private async verifyJwt(token: string): Promise<Principal> {
    const jwt = this.opts.jwt;
    if (!jwt || !this.getKey) throw new AuthError('JWT authentication is not configured');
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.getKey, {
        issuer: jwt.issuer,
        audience: jwt.audience,
        algorithms: (jwt.algorithms ?? ['ES256', 'EdDSA', 'RS256', 'PS256']).filter((a) => a.toLowerCase() !== 'none'),
        clockTolerance: jwt.clockToleranceSec ?? 30,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (cause) {
      throw new AuthError(`invalid token: ${cause instanceof Error ? cause.message : String(cause)}`, cause);
    }
    const tenant = payload.tenant;
    if (typeof tenant !== 'string') throw new AuthError('token has no tenant claim');
    try {
      assertTenant(tenant);
    } catch (cause) {
      throw new AuthError('token has an invalid tenant claim', cause);
    }
    const act = payload.act as { sub?: unknown } | undefined;
    const scope = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    return {
      tenant,
      subject: String(payload.sub),
      actor: typeof act?.sub === 'string' ? act.sub : String(payload.azp ?? payload.client_id ?? payload.sub),
      scopes: scope,
    };
  }
}
