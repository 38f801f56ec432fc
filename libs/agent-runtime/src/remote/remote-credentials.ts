import { readFile } from 'node:fs/promises';
import * as oauth from 'openid-client';
import { z } from 'zod';
import { MeshError } from '@mesh/contract';
import { EgressRefused, PinnedHttpClient, type EgressPolicy } from '@mesh/egress';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { abortable, errorText } from './abortable.js';

/** Where a secret is: an environment variable's name or a mounted file's path, never the value. */
export type SecretRef = { env: string } | { file: string };

/** How the platform authenticates to one remote A2A agent. */
export type RemoteCredentialsSpec =
  | { type: 'none' }
  | { type: 'bearer'; token: SecretRef }
  | { type: 'api-key'; header: string; key: SecretRef }
  | {
      type: 'oauth2-client-credentials';
      tokenUrl: string;
      clientId: string;
      clientSecret: SecretRef;
      scope?: string;
      audience?: string;
    };

export interface RemoteCredentials {
  /** Headers to add to one request to the remote agent. */
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /** The remote answered 401: drop any cached token; the next headers() gets a new one. */
  rejected(): void;
  close(): void;
}

export interface RemoteCredentialsOptions {
  /** Where `{ env }` secrets are read; `process.env` by default. */
  env?: NodeJS.ProcessEnv;
  /** The SSRF guard every token request goes through. */
  egress: EgressPolicy;
  /** Token refreshes that failed while the cached token was still valid are logged here. */
  logger?: Logger;
  /** Clock in ms (tests). */
  now?: () => number;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// RFC 9110 field-name (token characters).
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Headers a credential must not set: they frame the request or belong to the protocol.
const RESERVED_HEADERS = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'a2a-version']);

const envRef = z.strictObject({ env: z.string().regex(ENV_NAME) });
const fileRef = z.strictObject({ file: z.string().startsWith('/') });
// One message for every wrong shape: a branch's own error could quote what was given (a value).
const secretRefSchema = z.custom<SecretRef>((v) => envRef.safeParse(v).success || fileRef.safeParse(v).success, {
  error: 'a secret is given by reference only: { "env": "VAR_NAME" } or { "file": "/absolute/path" } (never the value itself)',
});

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

export const remoteCredentialsSpecSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('none') }),
    z.strictObject({ type: z.literal('bearer'), token: secretRefSchema }),
    z.strictObject({
      type: z.literal('api-key'),
      header: z
        .string()
        .regex(HEADER_NAME, 'must be an HTTP header name')
        .refine((h) => !RESERVED_HEADERS.has(h.toLowerCase()), 'is a header the protocol sets itself'),
      key: secretRefSchema,
    }),
    z.strictObject({
      type: z.literal('oauth2-client-credentials'),
      tokenUrl: httpUrl,
      clientId: z.string().min(1),
      clientSecret: secretRefSchema,
      scope: z.string().min(1).optional(),
      audience: z.string().min(1).optional(),
    }),
  ],
  { error: () => 'type must be one of: none, bearer, api-key, oauth2-client-credentials' },
) satisfies z.ZodType<RemoteCredentialsSpec>;

/** Parses a spec, or throws CONFIG_INVALID naming every problem (secrets are references: none is echoed). */
export function parseRemoteCredentialsSpec(input: unknown): RemoteCredentialsSpec {
  const parsed = remoteCredentialsSpecSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(spec)'}: ${i.message}`);
  throw new MeshError('CONFIG_INVALID', `invalid remote credentials: ${problems.join('; ')}`);
}

/** A secret's current value, read at each use so a rotated mounted file is picked up. */
export async function readSecret(ref: SecretRef, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if ('env' in ref) {
    const value = env[ref.env];
    if (value === undefined || value === '') throw new MeshError('CONFIG_INVALID', `secret env var "${ref.env}" is not set`);
    return value;
  }
  let value: string;
  try {
    value = await readFile(ref.file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new MeshError('CONFIG_INVALID', `secret file "${ref.file}" cannot be read (${code})`);
  }
  // Mounted secrets often end in a newline: never part of the secret.
  value = value.trim();
  if (value === '') throw new MeshError('CONFIG_INVALID', `secret file "${ref.file}" is empty`);
  return value;
}

export function remoteCredentials(spec: RemoteCredentialsSpec, opts: RemoteCredentialsOptions): RemoteCredentials {
  const s = parseRemoteCredentialsSpec(spec);
  const env = opts.env ?? process.env;
  switch (s.type) {
    case 'none':
      return { headers: async () => ({}), rejected: () => undefined, close: () => undefined };
    case 'bearer':
      return {
        headers: async () => ({ authorization: `Bearer ${await readSecret(s.token, env)}` }),
        rejected: () => undefined,
        close: () => undefined,
      };
    case 'api-key':
      return {
        headers: async () => ({ [s.header.toLowerCase()]: await readSecret(s.key, env) }),
        rejected: () => undefined,
        close: () => undefined,
      };
    case 'oauth2-client-credentials': {
      const cache = new TokenCache((signal) => requestToken(s, env, opts.egress, signal), {
        now: opts.now,
        logger: opts.logger,
      });
      return {
        headers: async (signal) => ({ authorization: `${await cache.token(signal)}` }),
        rejected: () => cache.invalidate(),
        close: () => cache.invalidate(),
      };
    }
  }
}

/** A token endpoint's answer (RFC 6749 §5.1), as much of it as the cache needs. */
export interface IssuedToken {
  access_token: string;
  token_type?: string;
  /** Lifetime in seconds; absent means the server did not say (kept until the remote rejects it). */
  expires_in?: number;
}

/**
 * When to fetch the next token for one that lives `expiresInMs`: at 80% of its life or 30 s before
 * it expires, whichever comes first, so a request in flight never carries a token about to lapse;
 * never before half its life, or a token living under 30 s would be fetched for every request.
 */
export function refreshDelayMs(expiresInMs: number): number {
  return Math.max(expiresInMs * 0.5, Math.min(expiresInMs * 0.8, expiresInMs - 30_000));
}

interface CachedToken {
  header: string;
  refreshAt: number;
  expiresAt: number;
}

/**
 * One client's access token: fetched on first use, reused until its refresh time, then fetched
 * again; concurrent callers share one token request (single-flight). A refresh that fails while the
 * old token is still valid keeps the old one (logged); the next call tries again.
 */
export class TokenCache {
  private cached?: CachedToken;
  private inflight?: Promise<CachedToken>;
  private readonly now: () => number;
  private readonly logger: Logger;

  constructor(
    private readonly fetchToken: (signal: AbortSignal) => Promise<IssuedToken>,
    opts: { now?: () => number; logger?: Logger } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger ?? silentLogger;
  }

  /** The `Authorization` header value of a current token. */
  async token(signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    const cached = this.cached;
    const now = this.now();
    if (cached && now < cached.refreshAt) return cached.header;
    try {
      return (await abortable(this.refresh(), signal)).header;
    } catch (err) {
      if (signal?.aborted) throw err;
      // The old token is still good: the remote can be called while the token server recovers.
      if (cached && this.cached === cached && this.now() < cached.expiresAt) {
        this.logger.warn({ err: errorText(err) }, 'access token refresh failed; the current token is used until it expires');
        return cached.header;
      }
      throw err;
    }
  }

  /** Forgets the cached token (the remote rejected it): the next call fetches a new one. */
  invalidate(): void {
    this.cached = undefined;
  }

  private refresh(): Promise<CachedToken> {
    // Shared by every caller until it settles; no caller's signal aborts it for the others.
    this.inflight ??= (async () => {
      try {
        const started = this.now();
        const issued = await this.fetchToken(AbortSignal.timeout(30_000));
        const type = issued.token_type && issued.token_type.toLowerCase() !== 'bearer' ? issued.token_type : 'Bearer';
        const lifetime = typeof issued.expires_in === 'number' && issued.expires_in > 0 ? issued.expires_in * 1000 : undefined;
        const token: CachedToken = {
          header: `${type} ${issued.access_token}`,
          // Measured from when the request was sent: the server's clock started no later.
          refreshAt: lifetime === undefined ? Infinity : started + refreshDelayMs(lifetime),
          expiresAt: lifetime === undefined ? Infinity : started + lifetime,
        };
        this.cached = token;
        return token;
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }
}

/** Token errors that mean the configuration is wrong (retrying will not help). */
const CLIENT_ERRORS = new Set([
  'invalid_client',
  'unauthorized_client',
  'invalid_scope',
  'invalid_grant',
  'invalid_target',
  'invalid_request',
]);

/**
 * One client-credentials token request (RFC 6749 §4.4) with client_secret_basic, through the egress
 * policy: openid-client builds and validates the exchange, its fetch is the pinned egress client.
 */
async function requestToken(
  spec: Extract<RemoteCredentialsSpec, { type: 'oauth2-client-credentials' }>,
  env: NodeJS.ProcessEnv,
  egress: EgressPolicy,
  signal: AbortSignal,
): Promise<IssuedToken> {
  const secret = await readSecret(spec.clientSecret, env);
  const tokenUrl = new URL(spec.tokenUrl);
  // No discovery: the token endpoint is all a client-credentials client talks to.
  const config = new oauth.Configuration(
    { issuer: tokenUrl.origin, token_endpoint: spec.tokenUrl },
    spec.clientId,
    undefined,
    oauth.ClientSecretBasic(secret),
  );
  // http: only reaches here when the egress policy allows it (a development or test policy).
  if (tokenUrl.protocol === 'http:') oauth.allowInsecureRequests(config);
  config[oauth.customFetch] = egressFetch(egress, signal);
  const params: Record<string, string> = {};
  if (spec.scope) params.scope = spec.scope;
  if (spec.audience) {
    // RFC 8707 names it `resource`; several servers (Auth0, Okta) read `audience`.
    params.resource = spec.audience;
    params.audience = spec.audience;
  }
  const where = `OAuth token request to ${spec.tokenUrl}`;
  try {
    const res = await oauth.clientCredentialsGrant(config, params);
    return { access_token: res.access_token, token_type: res.token_type, expires_in: res.expiresIn() };
  } catch (err) {
    if (err instanceof MeshError) throw err;
    if (err instanceof oauth.ResponseBodyError) throw refused(where, err.status, err.error, err.error_description);
    if (err instanceof oauth.WWWAuthenticateChallengeError) {
      // A 401 with a challenge (a wrong client or secret): the OAuth error is in the challenge or the body.
      const params = err.cause[0]?.parameters;
      const body = (await err.response.json().catch(() => ({}))) as { error?: unknown; error_description?: unknown };
      const error = params?.error ?? (typeof body.error === 'string' ? body.error : 'invalid_client');
      const desc = params?.error_description ?? (typeof body.error_description === 'string' ? body.error_description : undefined);
      throw refused(where, err.status, error, desc);
    }
    const cause = err instanceof Error && err.cause instanceof MeshError ? err.cause : undefined;
    if (cause) throw cause;
    throw new MeshError('UNAVAILABLE', `${where} failed: ${errorText(err)}`, { retryable: true });
  }
}

function refused(where: string, status: number, error: string, description?: string): MeshError {
  const permanent = CLIENT_ERRORS.has(error) || status === 401;
  const desc = description ? ` (${description})` : '';
  return new MeshError(permanent ? 'UNAUTHENTICATED' : 'UNAVAILABLE', `${where} was refused: ${error}${desc}, HTTP ${status}`, {
    retryable: !permanent,
  });
}

/** A fetch for openid-client that goes through the egress policy (pinned DNS, no redirects). */
function egressFetch(egress: EgressPolicy, signal: AbortSignal): oauth.CustomFetch {
  const http = new PinnedHttpClient(egress);
  return async (url, options) => {
    const body = options.body === undefined || options.body === null ? undefined : String(options.body);
    const pending = http.request(url, { method: options.method, headers: options.headers, body, timeoutMs: 30_000 });
    try {
      const res = await abortable(pending, signal);
      const headers = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      return new Response(res.body, { status: res.status, headers });
    } catch (err) {
      if (err instanceof EgressRefused) throw err;
      throw new MeshError('UNAVAILABLE', `token endpoint unreachable: ${errorText(err)}`, { retryable: true });
    }
  };
}
