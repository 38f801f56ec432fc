import type { Request, Response } from 'express';
import { toLegacyHTTPError } from '@a2a-js/sdk/compat/v0_3/server';
import { A2A_ERROR_CODE, toJsonRpcError, toRestErrorBody } from '@a2a-js/sdk/errors';
import type { Refusal } from '../admission/admission.js';
import type { Refuse } from './a2a-request.validator.js';
import { isJsonRpc } from './a2a-request.context.js';

// Answers of the A2A edge in each binding's own error format (JSON-RPC, HTTP+JSON, 0.3 HTTP+JSON).

/**
 * JSON-RPC code of a retryable refusal (HTTP 429/503 + Retry-After; ErrorInfo.reason says which):
 * a server-defined code (-32000..-32099) outside A2A's own, since the caller did nothing wrong and
 * the server did not fail either.
 */
export const RETRY_LATER_CODE = -32029;

/** The JSON-RPC id an error answer echoes: the request's own, or null when there is none or its body was not read. */
function echoedId(req: Request): string | number | null {
  const body = req.body as { id?: unknown } | undefined;
  return typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
}

/** A refusal as HTTP 429/503 + Retry-After, with an A2A error body (ErrorInfo says why). */
export function sendRefusal(req: Request, res: Response, r: Refusal): void {
  const info = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: r.reason,
    domain: 'mesh.dispatcher',
    metadata: { retryAfterSeconds: String(r.retryAfterSeconds) },
  };
  res.setHeader('Retry-After', String(r.retryAfterSeconds));
  if (isJsonRpc(req)) {
    const id = echoedId(req);
    res.status(r.httpStatus).json({ jsonrpc: '2.0', id, error: { code: RETRY_LATER_CODE, message: r.message, data: [info] } });
  } else {
    const status = r.httpStatus === 429 ? 'RESOURCE_EXHAUSTED' : 'UNAVAILABLE';
    res.status(r.httpStatus).json({ error: { code: r.httpStatus, status, message: r.message, details: [info] } });
  }
}

/** An error in the binding's format; once the headers went out, the response is only ended. */
export function sendError(
  req: Request,
  res: Response,
  httpStatus: number,
  jsonRpcCode: number,
  err: Error,
  jsonRpc = isJsonRpc(req),
): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  if (jsonRpc) {
    const id = echoedId(req);
    const mapped = toJsonRpcError(err);
    res.status(httpStatus).json({ jsonrpc: '2.0', id, error: { ...mapped, code: jsonRpcCode } });
  } else {
    res.status(httpStatus).type('application/json').json(toRestErrorBody(err, httpStatus));
  }
}

/** A request that failed validation: JSON-RPC -32602 (HTTP 200), HTTP+JSON 400 INVALID_ARGUMENT. */
export const refuseInvalid: Refuse = (req, res, err) => sendError(req, res, isJsonRpc(req) ? 200 : 400, A2A_ERROR_CODE.INVALID_PARAMS, err);

/** A refusal of a 0.3 HTTP+JSON request, in 0.3's bare error body (`{code, message, data}`). */
export function refuseLegacyRest(res: Response, err: Error): void {
  res.status(400).type('application/json').json(toLegacyHTTPError(err));
}
