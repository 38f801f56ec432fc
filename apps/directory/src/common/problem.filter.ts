import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { MeshError } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { DirectoryError, type DirectoryErrorCode, type FieldError } from './directory.exception.js';

const STATUS: Record<DirectoryErrorCode, number> = {
  VALIDATION_FAILED: 400,
  // The issue asks for 400 (not 413) on an oversized body, with a problem body like any bad input.
  BODY_TOO_LARGE: 400,
  SIGNATURE_INVALID: 400,
  SIGNATURE_REQUIRED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  GONE: 410,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
};

const TITLE: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  410: 'Gone',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** An RFC 9457 problem body; `errors` names each offending field. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: FieldError[];
}

function toProblem(err: unknown): { problem: Problem; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  if (err instanceof MeshError && err.code === 'UNAUTHENTICATED') {
    headers['WWW-Authenticate'] = 'Bearer';
    // Details of why a token failed go to logs only.
    return { problem: problem(401, 'UNAUTHENTICATED', 'missing or invalid credentials'), headers };
  }
  if (err instanceof DirectoryError) {
    const status = STATUS[err.code] ?? 500;
    const retryAfter = err.metadata.retryAfterSec;
    if (typeof retryAfter === 'number') headers['Retry-After'] = String(retryAfter);
    const p = problem(status, err.code, err.message);
    if (err.fields.length > 0) p.errors = err.fields;
    return { problem: p, headers };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    // Nest's own 400s (a pipe such as ParseIntPipe on `/versions/x`, an undecodable path) are bad
    // input like any other: the documented VALIDATION_FAILED, not an undocumented code.
    const code = status === 404 ? 'NOT_FOUND' : status === 400 ? 'VALIDATION_FAILED' : 'HTTP_ERROR';
    const p = problem(status, code, err.message);
    if (status === 400) p.errors = [undecodable(err)];
    return { problem: p, headers };
  }
  return { problem: problem(500, 'INTERNAL', 'internal error'), headers };
}

/**
 * The field of a 400 raised below the handlers: a path that does not percent-decode to UTF-8
 * (Express' URIError), or a body that does not decompress (body-parser's zlib errors).
 */
function undecodable(err: HttpException): FieldError {
  if (err.cause instanceof URIError) return { field: 'path', message: 'not valid percent-encoded UTF-8' };
  return { field: 'body', message: `could not be decoded (Content-Encoding): ${err.message}` };
}

function problem(status: number, code: string, detail: string): Problem {
  return {
    type: `https://agent-mesh.dev/problems/${code.toLowerCase().replace(/_/g, '-')}`,
    title: TITLE[status] ?? 'Error',
    status,
    detail,
    code,
  };
}

/** Writes a problem as `application/problem+json`; an error nothing mapped is logged to `log`. */
export function sendProblem(res: Response, err: unknown, log: Logger = silentLogger): void {
  const { problem: p, headers } = toProblem(err);
  if (p.code === 'INTERNAL') log.error({ src: 'directory', err: String(err), stack: (err as Error)?.stack }, 'unhandled error');
  res.status(p.status).set(headers).type('application/problem+json').send(JSON.stringify(p));
}

/** Maps every error thrown by a handler to a problem body (the only place HTTP statuses are chosen). */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger = silentLogger) {}

  catch(err: unknown, host: ArgumentsHost): void {
    sendProblem(host.switchToHttp().getResponse<Response>(), err, this.logger);
  }
}

/** Express error middleware for body-parser failures, which happen before Nest routing. */
export function bodyParserErrors(err: unknown, _req: Request, res: Response, next: NextFunction): void {
  const type = (err as { type?: string }).type;
  if (type === 'entity.too.large') {
    const limit = (err as { limit?: number }).limit;
    sendProblem(
      res,
      new DirectoryError('BODY_TOO_LARGE', `request body is over ${limit ?? 'the'} bytes`, [
        { field: 'body', message: `at most ${limit} bytes` },
      ]),
    );
  } else if (type === 'entity.parse.failed') {
    // The shared parser refuses bytes that are not UTF-8 as malformed JSON (RFC 8259); say which.
    const notUtf8 = /UTF-8/.test(String((err as Error).message));
    const problem = notUtf8 ? 'not well-formed UTF-8 (JSON text must be UTF-8)' : 'not valid JSON';
    sendProblem(res, new DirectoryError('VALIDATION_FAILED', `request body is ${problem}`, [{ field: 'body', message: problem }]));
  } else if (type !== undefined) {
    sendProblem(
      res,
      new DirectoryError('VALIDATION_FAILED', `request body refused: ${String((err as Error).message)}`, [
        { field: 'body', message: String((err as Error).message) },
      ]),
    );
  } else {
    next(err);
  }
}
