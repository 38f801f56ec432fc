import { decodeJwt, errors, jwtVerify } from 'jose';
import { TERMINAL_TASK_STATES, ToolGrants, type GrantClaims, type TaskState } from '@mesh/contract';
import type { MeshMetrics } from '@mesh/telemetry';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { issuedClaims, type IssuedKind } from './grant-claims.js';
import { GRANT_ALG, type GrantKeys } from './grant-keys.js';
import type { ToolAudiencePolicy } from './tool-audience.policy.js';

/**
 * RFC 6749 §5.2 / RFC 8693 / RFC 8707 error codes the token endpoint answers with (HTTP 400), and
 * `temporarily_unavailable` (503: the task store could not be read; the worker may try again).
 */
export type TokenExchangeErrorCode =
  'invalid_request' | 'invalid_grant' | 'invalid_target' | 'unsupported_grant_type' | 'temporarily_unavailable';

/** A refused exchange: the OAuth `error`, a bounded `reason` (metrics, logs) and the `error_description`. */
export class TokenExchangeError extends Error {
  constructor(
    readonly code: TokenExchangeErrorCode,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'TokenExchangeError';
  }

  /** The HTTP status of the answer. */
  get status(): 400 | 503 {
    return this.code === 'temporarily_unavailable' ? 503 : 400;
  }
}

/** RFC 8693 §2.2.1 success response. */
export interface TokenExchangeResponse {
  access_token: string;
  issued_token_type: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** The state of a task as its tenant's store holds it (undefined: no such task). */
export type TaskStateLookup = (taskId: string, tenant: string, agentId: string) => Promise<TaskState | string | undefined>;

export interface TokenExchangeOptions {
  keys: GrantKeys;
  issuer: string;
  /** The token endpoint's URL: the audience a grant must name. */
  tokenEndpoint: string;
  taskState: TaskStateLookup;
  policy: ToolAudiencePolicy;
  metrics?: Pick<MeshMetrics, 'tokenExchanges'>;
  logger?: Logger;
}

const TERMINAL = new Set<string>(TERMINAL_TASK_STATES);
/** Clock skew accepted between the replica that signed a grant and the one that verifies it. */
const CLOCK_TOLERANCE_S = 5;
const MAX_RESOURCE_LENGTH = 2048;

/**
 * RFC 8693 token exchange of a run command's grant for a token bound to one tool server (RFC 8707
 * `resource`): the grant must verify (own keys, issuer, audience, expiry), its task must still be
 * open, and the agent must be allowed that server. Every outcome is counted; a refusal is logged
 * with agent, task and tenant, never with a token.
 */
export class TokenExchange {
  private readonly log: Logger;

  constructor(private readonly o: TokenExchangeOptions) {
    this.log = (o.logger ?? silentLogger).child({ src: 'token-exchange' });
  }

  /** Answers a form of POST /oauth/token; throws {@link TokenExchangeError} when it refuses. */
  async exchange(form: Record<string, unknown>, nowMs = Date.now()): Promise<TokenExchangeResponse> {
    let grant: GrantClaims | undefined;
    try {
      const req = parseRequest(form);
      grant = await this.verifyGrant(req.subjectToken, nowMs);
      await this.assertTaskOpen(grant);
      await this.assertAllowed(grant, req.resource);
      const claims = issuedClaims(grant, req.resource, req.kind, nowMs);
      const token = this.o.keys.signJwt(ToolGrants.accessTokenTyp, claims);
      this.o.metrics?.tokenExchanges.inc({ outcome: 'issued', reason: 'ok' });
      // Who minted what, for an operator tracing a tool call back to its task (debug: one per exchange).
      this.log.debug(
        { agent: grant.agent_id, task: grant.task_id, tenant: grant.tenant, resource: req.resource, kind: req.kind },
        'token issued',
      );
      return {
        access_token: token,
        issued_token_type: req.kind === 'connection' ? ToolGrants.connectionTokenType : ToolGrants.accessTokenType,
        token_type: 'Bearer',
        expires_in: Math.max(0, (claims.exp as number) - Math.floor(nowMs / 1000)),
      };
    } catch (err) {
      const refusal =
        err instanceof TokenExchangeError
          ? err
          : new TokenExchangeError('temporarily_unavailable', 'unavailable', 'the grant cannot be checked now; try again');
      this.o.metrics?.tokenExchanges.inc({ outcome: 'refused', reason: refusal.reason });
      const who = grant ?? claimedGrant(form.subject_token);
      this.log.info(
        {
          agent: who?.agent_id,
          task: who?.task_id,
          tenant: who?.tenant,
          error: refusal.code,
          reason: refusal.reason,
          ...(err === refusal ? {} : { err: String(err) }),
        },
        'token exchange refused',
      );
      throw refusal;
    }
  }

  private async verifyGrant(token: string, nowMs: number): Promise<GrantClaims> {
    try {
      const { payload } = await jwtVerify(token, this.o.keys.verificationKeys(), {
        issuer: this.o.issuer,
        audience: this.o.tokenEndpoint,
        algorithms: [GRANT_ALG],
        typ: ToolGrants.grantTyp,
        currentDate: new Date(nowMs),
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['sub', 'exp', 'jti', 'tenant', 'agent_id', 'task_id', 'execution_id', 'act'],
      });
      return payload as unknown as GrantClaims;
    } catch (err) {
      if (err instanceof errors.JWTExpired) throw new TokenExchangeError('invalid_grant', 'expired', 'the grant has expired');
      throw new TokenExchangeError('invalid_grant', 'unverified', 'the grant does not verify (signature, issuer, audience or claims)');
    }
  }

  /** A finished or canceled task gets no new tool tokens. */
  private async assertTaskOpen(grant: GrantClaims): Promise<void> {
    const state = await this.o.taskState(grant.task_id, grant.tenant, grant.agent_id);
    if (state === undefined) throw new TokenExchangeError('invalid_grant', 'task_unknown', 'the task of the grant does not exist');
    if (TERMINAL.has(state)) throw new TokenExchangeError('invalid_grant', 'task_finished', 'the task of the grant has ended');
  }

  private async assertAllowed(grant: GrantClaims, resource: string): Promise<void> {
    const allowed = await this.o.policy.allowed(grant.agent_id);
    if (allowed !== 'any' && !allowed.has(resource))
      throw new TokenExchangeError('invalid_target', 'resource_not_allowed', 'the agent may not get tokens for this resource');
  }
}

interface ExchangeRequest {
  subjectToken: string;
  resource: string;
  kind: IssuedKind;
}

/** The form's parameters, each given once (RFC 6749 §3.2: a repeated parameter is an invalid request). */
export function parseRequest(form: Record<string, unknown>): ExchangeRequest {
  const one = (name: string): string | undefined => {
    const v = form[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new TokenExchangeError('invalid_request', 'repeated_parameter', `${name} must be given once`);
    return v;
  };
  const grantType = one('grant_type');
  if (grantType === undefined) throw new TokenExchangeError('invalid_request', 'missing_parameter', 'grant_type is required');
  if (grantType !== ToolGrants.grantType)
    throw new TokenExchangeError('unsupported_grant_type', 'grant_type', `only ${ToolGrants.grantType} is supported`);
  const subjectToken = one('subject_token');
  if (!subjectToken) throw new TokenExchangeError('invalid_request', 'missing_parameter', 'subject_token is required');
  if (one('subject_token_type') !== ToolGrants.jwtTokenType)
    throw new TokenExchangeError('invalid_request', 'token_type', `subject_token_type must be ${ToolGrants.jwtTokenType}`);
  if (form.resource !== undefined && typeof form.resource !== 'string')
    throw new TokenExchangeError('invalid_target', 'resource_count', 'exactly one resource is required');
  const resource = one('resource');
  if (!resource || resource.length > MAX_RESOURCE_LENGTH)
    throw new TokenExchangeError('invalid_target', 'resource_count', 'exactly one resource (the tool server audience) is required');
  if (form.audience !== undefined)
    throw new TokenExchangeError('invalid_request', 'audience', 'name the tool server with resource, not audience');
  const requested = one('requested_token_type') ?? ToolGrants.accessTokenType;
  if (requested !== ToolGrants.accessTokenType && requested !== ToolGrants.connectionTokenType)
    throw new TokenExchangeError('invalid_request', 'token_type', 'requested_token_type is not supported');
  return { subjectToken, resource, kind: requested === ToolGrants.connectionTokenType ? 'connection' : 'call' };
}

/** What a refused token claims to be (for the log line only; it may be forged). */
function claimedGrant(token: unknown): Partial<GrantClaims> | undefined {
  if (typeof token !== 'string') return undefined;
  try {
    const c = decodeJwt(token) as Partial<GrantClaims>;
    const str = (v: unknown) => (typeof v === 'string' ? v.slice(0, 200) : undefined);
    return { agent_id: str(c.agent_id), task_id: str(c.task_id), tenant: str(c.tenant) };
  } catch {
    return undefined;
  }
}
