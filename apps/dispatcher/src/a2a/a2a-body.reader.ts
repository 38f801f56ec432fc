import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { A2A_ERROR_CODE, ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { parseByteSize, refuseMalformedUtf8, withinBodyLimit } from '@mesh/service';
import { sendError } from './a2a-errors.responder.js';
import { isJsonRpc, localsOf } from './a2a-request.context.js';

/**
 * Reads an authenticated caller's JSON body (application/json as the service parsers read it
 * everywhere, objects and arrays; A2A's own media type leniently), up to `bodyLimit`. The bytes
 * read settle the body's charge to the tenant's byte budget. Bodies are read only once the caller
 * is authenticated; the dispatcher has no app-wide body parser. A body over the limit is refused
 * as it arrives (its declared length, or the bytes counted so far), never read to its end.
 */
export function readBody(bodyLimit: string): RequestHandler {
  const verify = (req: Request, res: Response, buf: Buffer) => {
    localsOf(res).bodyBytes = buf.length;
    refuseMalformedUtf8(req, res, buf);
  };
  const parseJson = express.json({ limit: bodyLimit, verify });
  const parseA2aJson = express.json({ type: 'application/a2a+json', limit: bodyLimit, strict: false, verify });
  const maxBodyBytes = parseByteSize(bodyLimit);
  const parse = withinBodyLimit((req, res, next) => {
    parseJson(req, res, (err?: unknown) => (err ? next(err) : parseA2aJson(req, res, next)));
  }, maxBodyBytes);
  return (req, res, next) => {
    const locals = localsOf(res);
    if (!locals.principal) return next();
    parse(req, res, (err?: unknown) => {
      // A body refused for its size cost up to the limit to read.
      const tooLarge = (err as { type?: string } | undefined)?.type === 'entity.too.large';
      locals.bodyCharge?.settle(tooLarge ? maxBodyBytes : (locals.bodyBytes ?? 0));
      next(err);
    });
  };
}

/**
 * Body-parser and URL-decoding failures (the app-wide parser or ours) in the binding's format,
 * before any SDK code ran. Mount it on the app at `/a2a` (a path whose agent id does not decode
 * never matches `/a2a/:agentId`): express never passes errors into a router, only to four-argument
 * handlers.
 */
export function a2aBodyErrorHandler(bodyLimit: string, logger: Logger = silentLogger) {
  const log = logger.child({ src: 'a2a' });
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    // The parser's late report of a body already refused (its connection closing): answered once.
    if (res.headersSent) return;
    const e = err as { type?: string; status?: number; message?: string };
    // Relative to `/a2a`: the path below `/{agentId}` decides, as everywhere else.
    const jsonRpc = isJsonRpc({ method: req.method, path: req.path.replace(/^\/[^/]+/, '') });
    const fail = (httpStatus: number, jsonRpcCode: number, error: Error) => sendError(req, res, httpStatus, jsonRpcCode, error, jsonRpc);
    if (e.type === 'entity.too.large') {
      return fail(413, A2A_ERROR_CODE.INVALID_REQUEST, new RequestMalformedError(`request body exceeds the limit of ${bodyLimit}`));
    }
    if (e.type === 'entity.parse.failed' || err instanceof SyntaxError) {
      return jsonRpc
        ? fail(200, A2A_ERROR_CODE.PARSE_ERROR, new Error('Invalid JSON payload.'))
        : fail(400, A2A_ERROR_CODE.INVALID_PARAMS, new RequestMalformedError('Invalid JSON payload.'));
    }
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      return fail(jsonRpc ? 200 : 400, A2A_ERROR_CODE.CONTENT_TYPE_NOT_SUPPORTED, new ContentTypeNotSupportedError(e.message));
    }
    // A path segment that is not valid percent-encoding (`/tasks/%ff`, `/a2a/%ff`): express fails
    // to decode the route parameter before any handler ran. The caller's URL is wrong, not the
    // server. (Checked before the generic 4xx below: express marks it 400, and it is no body error.)
    if (err instanceof URIError) {
      return jsonRpc
        ? fail(404, A2A_ERROR_CODE.METHOD_NOT_FOUND, new Error('agent not found: malformed URL encoding'))
        : fail(400, A2A_ERROR_CODE.INVALID_PARAMS, new RequestMalformedError('path: malformed URL encoding (%XX must encode UTF-8)'));
    }
    // A compressed body that does not decompress (garbage under Content-Encoding gzip/deflate/br):
    // the caller's body is unreadable, like malformed JSON.
    const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity' && (e.status ?? 500) < 500) {
      const msg = `the body could not be decoded with Content-Encoding ${JSON.stringify(encoding.slice(0, 32))}`;
      return jsonRpc
        ? fail(200, A2A_ERROR_CODE.PARSE_ERROR, new Error(`Invalid JSON payload: ${msg}.`))
        : fail(400, A2A_ERROR_CODE.INVALID_PARAMS, new RequestMalformedError(msg));
    }
    // Any other client error of the body parser (aborted, length mismatch): a 4xx, never a 500.
    if (e.status !== undefined && e.status >= 400 && e.status < 500) {
      return fail(e.status, A2A_ERROR_CODE.INVALID_REQUEST, new RequestMalformedError('the request body could not be read'));
    }
    log.error({ err: String(err) }, 'unhandled error');
    return fail(500, A2A_ERROR_CODE.INTERNAL_ERROR, new Error('internal error'));
  };
}
