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
