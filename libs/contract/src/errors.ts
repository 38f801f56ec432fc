/** Stable error codes of the platform; edges map them to HTTP, A2A and retry decisions. */
export type MeshErrorCode =
  | 'CONFIG_INVALID'
  | 'CONTRACT_VIOLATION'
  | 'CHANNEL_KEY_INVALID'
  | 'DECODE_FAILED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'UNAVAILABLE'
  | 'INTERNAL'
  | (string & {});

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

const TRANSIENT_CODES = new Set([
  // Network: the peer is restarting or briefly unreachable.
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // Postgres SQLSTATE: connection exceptions (08…), admin/crash shutdown and "starting up" (57P0…), too many connections.
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);
const TRANSIENT_NAMES = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError']);
const TRANSIENT_MESSAGE =
  /Connection terminated|terminating connection due to administrator command|the database system is (starting up|shutting down|in recovery mode)|not queryable|timeout exceeded when trying to connect/i;

/**
 * True when a failure comes from a dependency that is briefly unreachable — a database or broker
 * restart — and says nothing about the work itself. Consumers retry such failures without using up
 * the attempts that lead to the dead-letter topic. Looks through `cause`, `driverError` (TypeORM)
 * and `errors` (AggregateError).
 */
export function isTransientInfrastructureError(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; driverError?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && TRANSIENT_CODES.has(e.code)) return true;
  if (typeof e.name === 'string' && TRANSIENT_NAMES.has(e.name)) return true;
  if (typeof e.message === 'string' && TRANSIENT_MESSAGE.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isTransientInfrastructureError(x, depth + 1))) return true;
  return isTransientInfrastructureError(e.cause, depth + 1) || isTransientInfrastructureError(e.driverError, depth + 1);
}
