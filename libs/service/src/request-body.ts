import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * How a service treats request bodies before any parser sees them. A body is read only by a
 * parser wrapped in {@link withinBodyLimit}; every answer given while a body is still unread either
 * drains it (a small declared length: the connection stays usable) or closes the connection
 * ({@link closeUnreadBodies}). No route, matched or not, reads more than the limit, nor more than
 * a small body it did not ask for.
 */

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** A size as body-parser reads it (`512kb`, `1mb`: units of 1024) or a bare count, in bytes; NaN when it is none. */
export function parseByteSize(raw: string): number {
  const m = /^\s*(\d{1,12})\s*(b|kb|mb|gb)?\s*$/i.exec(raw);
  return m ? Number(m[1]) * SIZE_UNITS[(m[2] ?? 'b').toLowerCase()]! : NaN;
}

/** The request announces a body (Content-Length above 0, or chunked). */
export const hasBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** The body is compressed (any Content-Encoding but identity): what it decodes to is known once read. */
export const isEncoded = (req: IncomingMessage): boolean =>
  String(req.headers['content-encoding'] ?? 'identity').toLowerCase() !== 'identity';

/** The body's declared length; undefined for a chunked body (its length is known once read). */
export const declaredLength = (req: IncomingMessage): number | undefined =>
  req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length'] ?? 0) : undefined;

/**
 * Body-parser `verify` hook: a JSON body must be UTF-8 (RFC 8259). Without it, invalid bytes would be
 * decoded as U+FFFD and stored as something the caller never sent; instead the body is refused as
 * malformed JSON (`entity.parse.failed`, 400), which every app already answers in its own format.
 */
export function refuseMalformedUtf8(_req: IncomingMessage, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) {
    throw Object.assign(new SyntaxError('request body is not valid UTF-8'), { status: 400, type: 'entity.parse.failed' });
  }
}

/** The error body-parser raises for a body over its limit, so each app answers it in its own format. */
function entityTooLarge(limitBytes: number): Error {
  return Object.assign(new Error(`request entity too large (limit ${limitBytes} bytes)`), {
    status: 413,
    statusCode: 413,
    expose: true,
    type: 'entity.too.large',
    limit: limitBytes,
  });
}

const EXPECTS_CONTINUE = Symbol('expectsContinue');

/**
 * Node answers `Expect: 100-continue` with `100 Continue` before any handler ran, inviting the body
 * of a caller not yet authenticated or charged. With this, the interim answer is sent only when a
 * body is about to be read ({@link withinBodyLimit}); a request refused before that gets its final
 * answer and no invitation.
 */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    (req as { [EXPECTS_CONTINUE]?: boolean })[EXPECTS_CONTINUE] = true;
    server.emit('request', req, res);
  });
}

function sendContinue(req: IncomingMessage, res: ServerResponse): void {
  const r = req as { [EXPECTS_CONTINUE]?: boolean };
  if (r[EXPECTS_CONTINUE] && !res.headersSent) res.writeContinue();
  r[EXPECTS_CONTINUE] = false;
}

/**
 * Wraps a body parser (express.json and kin) so no more than `limitBytes` arrive through it. A
 * declared length over the limit is refused before a byte is read; a body of unannounced length
 * (chunked) or a compressed one is counted on the wire and refused the moment it passes the limit.
 * body-parser alone would read every remaining byte of an oversized body before answering its 413
 * (gigabytes, for as long as the caller sends). The refusal is body-parser's own `entity.too.large`
 * error passed to `next`, so each app answers it in its own format, and the connection is closed.
 */
export function withinBodyLimit(parse: RequestHandler, limitBytes: number): RequestHandler {
  return (req, res, next) => {
    if (!hasBody(req)) return parse(req, res, next);
    const declared = declaredLength(req);
    if (declared !== undefined && !(declared <= limitBytes)) {
      res.setHeader('Connection', 'close');
      return next(entityTooLarge(limitBytes));
    }
    if (declared !== undefined && !isEncoded(req)) {
      sendContinue(req, res);
      return parse(req, res, next);
    }
    // The parser's own limit applies to the decoded body, and on failure it reads what is left of
    // the wire to the end: the wire is bounded here. (Added next to the parser's listener in the
    // same tick, before the stream flows, so both see every chunk.)
    let settled = false;
    let received = 0;
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      req.off('data', count);
      next(err);
    };
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received <= limitBytes) return;
      res.setHeader('Connection', 'close');
      stopReading(req);
      finish(entityTooLarge(limitBytes));
    };
    req.on('data', count);
    sendContinue(req, res);
    parse(req, res, finish);
  };
}

/**
 * Reads no more of a refused body. The connection closes once its answer is written, but that may
 * be long after: on a pipelined connection the answer waits for the earlier requests' answers, and
 * meanwhile the parser's error path (body-parser reads a failed body to its end before reporting)
 * would read whatever the caller sends. Paused, the request buffers a few KiB and Node stops
 * reading the socket.
 */
function stopReading(req: IncomingMessage): void {
  req.pause();
  req.resume = function (this: IncomingMessage) {
    return this;
  };
}

/** An unread body up to this size is drained and the connection kept: it costs no more than its headers. */
const DRAIN_AT_MOST = 16 * 1024;

/**
 * First middleware of a service: when an answer's head is written while the request's body has not
 * arrived in full, a small declared body (at most 16 KiB) is drained (what Node does anyway, and
 * the kept-alive connection stays usable) and anything else (larger, chunked) closes the
 * connection. Without it, a route that reads no body (`POST /healthz`, an unknown path, a refusal,
 * a caller without a credential) would read whatever a caller sends on a kept-alive connection,
 * body after pipelined body, at wire speed.
 */
export function closeUnreadBodies(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req)) return next();
    const writeHead = res.writeHead;
    res.writeHead = function (this: Response, ...args: unknown[]) {
      if (!req.complete && !this.headersSent) {
        const declared = declaredLength(req);
        if (declared === undefined || !(declared <= DRAIN_AT_MOST)) this.setHeader('Connection', 'close');
      }
      return (writeHead as (...a: unknown[]) => Response).apply(this, args);
    } as Response['writeHead'];
    next();
  };
}
