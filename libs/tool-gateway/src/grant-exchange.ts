import { decodeJwt } from 'jose';
import { MeshError, ToolGrants } from '@mesh/contract';
import type { FetchLike } from './http-fetch.js';
import type { CallTokenClaims, ConnectionTokenClaims, ToolTokenMinter } from './tool-token.js';

export interface GrantExchangeOptions {
  /** The dispatcher's token endpoint (AGENTS_TOKEN_URL), e.g. https://dispatcher.example/oauth/token. */
  tokenUrl: string;
  /** A token is used until this long before it expires, then exchanged again (default 10 s). */
  refreshBeforeMs?: number;
  /** Longest an exchange may take (default 10 s). */
  timeoutMs?: number;
  fetch?: FetchLike;
  now?: () => number;
}

/** A token and when it must no longer be handed out (ms since the epoch). */
interface Cached {
  token: string;
  useUntilMs: number;
}

/** Tokens kept at most; expired ones go first. */
const MAX_CACHED = 2048;

/**
 * Tool tokens for a worker that holds no signing secret: the run command's grant is exchanged at
 * the dispatcher's token endpoint (RFC 8693) for a token bound to one tool server (RFC 8707
 * `resource`). Tokens are cached per (grant, resource, kind) until shortly before they expire, and
 * concurrent requests for the same one share one exchange. A call without a grant (a command of an
 * older dispatcher) fails with UNAUTHENTICATED: the worker has nothing to exchange.
 */
export class GrantExchangeMinter implements ToolTokenMinter {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<Cached>>();
  private readonly fetch: FetchLike;
  private readonly now: () => number;

  constructor(private readonly o: GrantExchangeOptions) {
    this.fetch = o.fetch ?? ((url, init) => fetch(url, init));
    this.now = o.now ?? Date.now;
  }

  mint(c: CallTokenClaims): Promise<string> {
    if (!c.grant)
      return Promise.reject(
        new MeshError('UNAUTHENTICATED', `no grant came with this task's run command: no token for ${c.audience} can be had without one`),
      );
    return this.token(c.grant, c.audience, 'call');
  }

  mintConnection(c: ConnectionTokenClaims): Promise<string> {
    if (!c.grant)
      return Promise.reject(
        new MeshError(
          'UNAUTHENTICATED',
          `no grant of a running task to open a session to ${c.audience} with: a tool session opens within a task`,
        ),
      );
    return this.token(c.grant, c.audience, 'connection');
  }

  /** Tokens cached now (tests). */
  get size(): number {
    return this.cache.size;
  }

  private async token(grant: string, resource: string, kind: 'call' | 'connection'): Promise<string> {
    const key = `${kind}\n${resource}\n${grantKey(grant)}`;
    const cached = this.cache.get(key);
    if (cached && cached.useUntilMs > this.now()) return cached.token;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.exchange(grant, resource, kind).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    const fresh = await pending;
    this.keep(key, fresh);
    return fresh.token;
  }

  private keep(key: string, entry: Cached): void {
    if (this.cache.size >= MAX_CACHED) {
      const now = this.now();
      for (const [k, v] of this.cache) if (v.useUntilMs <= now) this.cache.delete(k);
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, entry);
  }

  private async exchange(grant: string, resource: string, kind: 'call' | 'connection'): Promise<Cached> {
    const body = new URLSearchParams({
      grant_type: ToolGrants.grantType,
      subject_token: grant,
      subject_token_type: ToolGrants.jwtTokenType,
      resource,
      requested_token_type: kind === 'connection' ? ToolGrants.connectionTokenType : ToolGrants.accessTokenType,
    });
    const started = this.now();
    let res: Response;
    try {
      res = await this.fetch(this.o.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: body.toString(),
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000),
      });
    } catch (cause) {
      throw new MeshError('UNAVAILABLE', `the token endpoint ${this.o.tokenUrl} is unreachable: ${String(cause)}`, {
        cause,
        retryable: true,
      });
    }
    const answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (res.status === 400 && typeof answer.error === 'string')
      throw new MeshError('UNAUTHENTICATED', `the token endpoint refused a token for ${resource}: ${answer.error}${describe(answer)}`, {
        metadata: { error: answer.error },
      });
    if (!res.ok || typeof answer.access_token !== 'string' || typeof answer.expires_in !== 'number')
      throw new MeshError('UNAVAILABLE', `the token endpoint answered ${res.status} without a token`, { retryable: res.status >= 500 });
    return { token: answer.access_token, useUntilMs: usableUntil(started, answer.expires_in, this.o.refreshBeforeMs ?? 10_000) };
  }
}

/**
 * When a token issued at `issuedAtMs` for `expiresInS` stops being handed out: `refreshBeforeMs`
 * before it expires, so a call never carries one that expires on the way.
 */
export function usableUntil(issuedAtMs: number, expiresInS: number, refreshBeforeMs: number): number {
  return issuedAtMs + expiresInS * 1000 - refreshBeforeMs;
}

/** A grant's `jti` (one grant per turn), or the grant itself when it has none readable. */
function grantKey(grant: string): string {
  try {
    const { jti } = decodeJwt(grant);
    if (typeof jti === 'string' && jti !== '') return jti;
  } catch {
    // Not a JWT: the endpoint will say so; the key only needs to be stable.
  }
  return grant;
}

const describe = (a: Record<string, unknown>) => (typeof a.error_description === 'string' ? ` (${a.error_description.slice(0, 300)})` : '');
