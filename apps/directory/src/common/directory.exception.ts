import { MeshError } from '@mesh/contract';

/** One offending field of a request, named by its path (`card.skills[0].tags`). */
export interface FieldError {
  field: string;
  message: string;
}

/** Error codes of the directory; only the problem filter maps them to HTTP. */
export type DirectoryErrorCode =
  | 'VALIDATION_FAILED'
  | 'BODY_TOO_LARGE'
  | 'SIGNATURE_INVALID'
  | 'SIGNATURE_REQUIRED'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'GONE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE';

/** The directory's one exception type: a code, a message, optional field errors. */
export class DirectoryError extends MeshError {
  declare readonly code: DirectoryErrorCode;
  constructor(
    code: DirectoryErrorCode,
    message: string,
    readonly fields: FieldError[] = [],
    opts: { retryAfterSec?: number; cause?: unknown } = {},
  ) {
    super(code, message, {
      cause: opts.cause,
      retryable: code === 'RATE_LIMITED' || code === 'UNAVAILABLE',
      metadata: opts.retryAfterSec === undefined ? {} : { retryAfterSec: opts.retryAfterSec },
    });
    this.name = 'DirectoryError';
  }

  /** Not found — also what another tenant's private agent looks like (never "forbidden"). */
  static notFound(id: string): DirectoryError {
    return new DirectoryError('NOT_FOUND', `no agent "${id}"`);
  }
}
