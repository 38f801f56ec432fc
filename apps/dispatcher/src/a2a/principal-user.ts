import type { Principal } from '@mesh/auth';
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import type { StreamEventIds } from './stream-event-ids.js';
import type { RequestTimes } from './a2a-time.headers.js';

/** The authenticated caller as the SDK's `User`; the principal is the only source of tenant. */
export class PrincipalUser implements User {
  constructor(
    readonly principal: Principal,
    /** Aborted when the caller's connection closes: streams stop their work on it. */
    readonly closed?: AbortSignal,
    /** A streaming request's SSE ids (and the caller's Last-Event-ID); absent on other requests. */
    readonly streamIds?: StreamEventIds,
    /** A send's A2A-Deadline-Ms and x-request-timeout-ms, as the edge parsed them. */
    readonly times: RequestTimes = {},
  ) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return `${this.principal.tenant}/${this.principal.subject}`;
  }
}

/**
 * The principal of a call. A request's own A2A `tenant` (JSON-RPC `params.tenant`, REST path
 * prefix, the SDK's `context.tenant`) only ever repeats the authenticated one: the edge refuses
 * any other (a2a-request.validator.ts).
 */
export function principalOf(context: ServerCallContext): Principal {
  const user = context.user;
  if (!(user instanceof PrincipalUser)) throw new Error('request reached the A2A handler without authentication');
  return user.principal;
}
