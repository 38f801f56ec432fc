import type { RequestHandler } from 'express';
import { A2A_ERROR_CODE, ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import { sendError } from './a2a-errors.responder.js';

/**
 * JSON-RPC 2.0 says a parsed body that is not a Request object (batch, wrong `jsonrpc`, no
 * method, bad id type) is -32600 Invalid Request; the SDK would report -32602, so the envelope is
 * checked here. Params and everything after stay with the SDK.
 */
export const validJsonRpcEnvelope: RequestHandler = (req, res, next) => {
  const body = req.body as unknown;
  if (body === undefined) {
    // Not parsed. A wrong content type is the SDK guard's answer; none at all (or an empty one)
    // passes that guard and would reach the SDK as "Invalid request body type" (-32602).
    if (req.header('content-type')?.trim()) return next();
    return sendError(
      req,
      res,
      200,
      A2A_ERROR_CODE.CONTENT_TYPE_NOT_SUPPORTED,
      new ContentTypeNotSupportedError('Content-Type: a JSON-RPC request is sent as application/json'),
    );
  }
  const r = body as { jsonrpc?: unknown; method?: unknown; id?: unknown };
  // `in` throws on primitives: a body of `""` or `5` (valid JSON with strict: false) is not a request.
  const isObject = typeof body === 'object' && body !== null;
  const idOk = !isObject || !('id' in r) || r.id === null || typeof r.id === 'string' || Number.isInteger(r.id);
  if (typeof body !== 'object' || body === null || Array.isArray(body) || r.jsonrpc !== '2.0' || typeof r.method !== 'string' || !idOk) {
    res.status(200).json({
      jsonrpc: '2.0',
      id: idOk && typeof r?.id !== 'undefined' ? r.id : null,
      error: { code: A2A_ERROR_CODE.INVALID_REQUEST, message: 'Invalid Request: expected a JSON-RPC 2.0 request object' },
    });
    return;
  }
  // A notification (no `id`): JSON-RPC 2.0 forbids any reply, and A2A defines every method as a
  // request whose answer is the point (a task, its state). It is not run — a SendMessage must not
  // start work nobody hears about — and answered 204 with no body.
  if (!('id' in r)) {
    res.status(204).end();
    return;
  }
  // An integer id beyond ±(2^53−1) was already rounded by the JSON parser: echoing it would answer
  // another id (RFC 7493 §2.2: I-JSON numbers stay within IEEE 754 double precision).
  if (typeof r.id === 'number' && !Number.isSafeInteger(r.id)) {
    res.status(200).json({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: A2A_ERROR_CODE.INVALID_REQUEST,
        message: 'Invalid Request: id: an integer id must be within ±9007199254740991 to be echoed exactly; send a larger one as a string',
      },
    });
    return;
  }
  // The SDK answers an empty method name with -32602 "Invalid JSON-RPC Request": it names no method.
  if (r.method === '') {
    res.status(200).json({
      jsonrpc: '2.0',
      id: r.id ?? null,
      error: { code: A2A_ERROR_CODE.METHOD_NOT_FOUND, message: 'Method not found: method must name an A2A method' },
    });
    return;
  }
  next();
};
