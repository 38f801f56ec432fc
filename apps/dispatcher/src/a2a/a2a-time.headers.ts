import type { IncomingHttpHeaders } from 'node:http';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { A2A_LIMITS } from './a2a-request.schemas.js';

/** Relative task deadline header (milliseconds from now); message metadata `deadlineUnixMs` is absolute. */
export const DEADLINE_HEADER = 'a2a-deadline-ms';
/** Header a caller may use to shorten how long a blocking SendMessage waits (milliseconds). */
export const REQUEST_TIMEOUT_HEADER = 'x-request-timeout-ms';

/** The time headers of a send, parsed once at the edge; absent = not given. */
export interface RequestTimes {
  /** A2A-Deadline-Ms: the task's deadline, milliseconds from the request. */
  deadlineMs?: number;
  /** x-request-timeout-ms: how long a blocking send may wait, milliseconds. */
  timeoutMs?: number;
}

const FIELDS = [
  { header: DEADLINE_HEADER, name: 'A2A-Deadline-Ms', key: 'deadlineMs' },
  { header: REQUEST_TIMEOUT_HEADER, name: 'x-request-timeout-ms', key: 'timeoutMs' },
] as const;

/**
 * A2A-Deadline-Ms and x-request-timeout-ms, each one integer of at most 16 decimal digits from 0
 * to {@link A2A_LIMITS.deadlineAheadMs} (surrounding blanks aside; leading zeros are read as such).
 * Anything else — a sign (`+5`), a fraction (`5.0`), an exponent (`1e3`), a repeated header (Node
 * joins repeats with ", "), a value over the maximum — is refused naming the header, never read
 * as something else or ignored.
 */
export function parseTimeHeaders(headers: IncomingHttpHeaders): RequestTimes | RequestMalformedError {
  const times: RequestTimes = {};
  for (const { header, name, key } of FIELDS) {
    const raw = headers[header];
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    const digits = /^\s*(\d{1,16})\s*$/.exec(value)?.[1];
    if (digits === undefined || Number(digits) > A2A_LIMITS.deadlineAheadMs) {
      const max = A2A_LIMITS.deadlineAheadMs;
      return new RequestMalformedError({
        message: `${name}: must be one integer from 0 to ${max} (milliseconds; at most ${max / 86_400_000} days)`,
        metadata: { field: name },
      });
    }
    times[key] = Number(digits);
  }
  return times;
}
