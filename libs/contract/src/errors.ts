/**
 * Stable error codes of the platform, every one of them: edges map them to HTTP, A2A and retry
 * decisions, and a code compared or thrown anywhere must be listed here (a typo does not compile).
 */
export type MeshErrorCode =
  | 'CONFIG_INVALID'
  | 'CONTRACT_VIOLATION'
  | 'CHANNEL_KEY_INVALID'
  | 'DECODE_FAILED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'UNAVAILABLE'
  | 'INTERNAL'
  | 'FORBIDDEN'
  // A turn stopped: the task was canceled, its deadline passed, its lease went to another worker,
  // or its partition was revoked from this consumer.
  | 'CANCELLED'
  | 'DEADLINE_EXCEEDED'
  | 'LEASE_LOST'
  | 'REVOKED'
  // Tool calls through the tool gateway.
  | 'TOOL_NOT_FOUND'
  | 'TOOL_UNAVAILABLE'
  // The bus: an envelope kind no handler takes, a command that cannot be cancelled.
  | 'NO_HANDLER'
  | 'NOT_CANCELLABLE'
  // Edges: authentication (libs/auth), the egress policy (libs/egress).
  | 'UNAUTHENTICATED'
  | 'EGRESS_REFUSED'
  // The directory's HTTP problems (apps/directory's DirectoryErrorCode).
  | 'VALIDATION_FAILED'
  | 'BODY_TOO_LARGE'
  | 'SIGNATURE_INVALID'
  | 'SIGNATURE_REQUIRED'
  | 'GONE'
  | 'RATE_LIMITED';

export interface MeshErrorOptions {
  retryable?: boolean;
  cause?: unknown;
  metadata?: Record<string, unknown>;
}

/**
 * The one base error: retry and dead-letter policy read `retryable` and `code`, never the message.
 */
export class MeshError extends Error {
  readonly code: MeshErrorCode;
  readonly retryable: boolean;
  readonly metadata: Record<string, unknown>;

  constructor(code: MeshErrorCode, message: string, options: MeshErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MeshError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.metadata = options.metadata ?? {};
  }
}

/** True when a failure may succeed on a later attempt (unknown errors are treated as retryable). */
export function isRetryable(err: unknown): boolean {
  return err instanceof MeshError ? err.retryable : true;
}

/**
 * Says whether a failure comes from a dependency that is briefly unreachable — a database or broker
 * restart — and says nothing about the work itself. Consumers retry such failures without using up
 * the attempts that lead to the dead-letter topic. `@mesh/database` (Postgres) and `@mesh/bus`
 * (Kafka) each provide one; a service combines those of what it uses with {@link anyTransient}.
 */
export type TransientErrorTest = (err: unknown) => boolean;

/** What a test reads of one error in a chain. */
export interface ErrorFacts {
  code?: unknown;
  name?: unknown;
  message?: unknown;
}

/**
 * True when `err` or anything it wraps passes `test`: looks through `cause`, `driverError`
 * (TypeORM) and `errors` (AggregateError), a few levels deep.
 */
export function anyCause(err: unknown, test: (e: ErrorFacts) => boolean, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as ErrorFacts & { cause?: unknown; driverError?: unknown; errors?: unknown };
  if (test(e)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => anyCause(x, test, depth + 1))) return true;
  return anyCause(e.cause, test, depth + 1) || anyCause(e.driverError, test, depth + 1);
}

/** A test that passes when any of `tests` does. */
export function anyTransient(...tests: TransientErrorTest[]): TransientErrorTest {
  return (err) => tests.some((t) => t(err));
}
