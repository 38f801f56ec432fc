import type { RequestHandler } from 'express';
import type { AgentCard } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, VersionNotSupportedError } from '@a2a-js/sdk/errors';
import { A2A_PARAMS } from './a2a-request.schemas.js';
import { isLegacyRequest } from './a2a-request.validator.js';
import { sendError } from './a2a-errors.responder.js';

// A2A-Version: a patch (1.0.1) is the same version; the query parameter stands in for the header.
export const normaliseVersion: RequestHandler = (req, _res, next) => {
  const query = req.query['A2A-Version'] ?? req.query['a2a-version'];
  // A repeated parameter is named as given (`1.0, 1.0`), like a repeated header, not read as absent.
  const fromQuery = typeof query === 'string' ? query : Array.isArray(query) ? query.join(', ') : undefined;
  const raw = req.header('A2A-Version') ?? fromQuery;
  if (raw !== undefined) {
    const m = /^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$/.exec(raw);
    req.headers['a2a-version'] = m ? `${Number(m[1])}.${Number(m[2])}` : raw;
  }
  next();
};

/**
 * What a request without A2A-Version asks for (the spec's rule; the SDK's too) — unless its method
 * or route exists only in 1.0, which is then served as 1.0.
 */
const VERSION_WITHOUT_HEADER = '0.3';
const V1 = '1.0';

/** The 1.0 JSON-RPC method names (any other name asked for as 0.3 is the compat layer's -32601). */
const V1_METHODS: ReadonlySet<string> = new Set([...Object.keys(A2A_PARAMS), 'SendStreamingMessage']);

const supportedVersions = (card: AgentCard, binding: string) =>
  new Set(card.supportedInterfaces.filter((i) => i.protocolBinding === binding && i.protocolVersion).map((i) => i.protocolVersion));

/** A 1.0 method asked for as 0.3 (no A2A-Version): the version it lacks is named. */
const needsVersion1 = (what: string, requested: string | undefined) =>
  new VersionNotSupportedError(
    `${what} is A2A 1.0: send A2A-Version: 1.0 (${requested ? `A2A-Version ${requested}` : 'a request without A2A-Version'} is A2A 0.3, ` +
      'served by its own methods)',
  );

/**
 * The A2A-Version rule of the JSON-RPC binding: a request without the header is 0.3 (the spec's
 * rule), served by the SDK's compatibility layer when it names a 0.3 method (`message/send`, …);
 * one naming a method only 1.0 has (`SendMessage`, …) cannot mean 0.3 and is served as 1.0 (1.0
 * clients that omit the header work). A 1.0 method sent as `A2A-Version: 0.3` is refused, naming
 * the header it lacks.
 *
 * The SDK's JSON-RPC handler refuses an unsupported A2A-Version too, but it logs each refusal as an
 * "Unhandled error" with a stack trace — a log flood anyone can cause. Refused here with the same
 * answer (-32009 with ErrorInfo), and nothing logged.
 */
export function jsonRpcVersionGate(card: AgentCard): RequestHandler {
  const supported = supportedVersions(card, 'JSONRPC');
  return (req, res, next) => {
    if (req.body === undefined) return next(); // not parsed (wrong content type): the SDK's guard answers
    const header = req.header('A2A-Version') || undefined;
    const requested = header ?? VERSION_WITHOUT_HEADER;
    if (!supported.has(requested)) {
      const err = new VersionNotSupportedError(
        `The requested A2A protocol version '${requested}' is not supported. Supported versions: ${[...supported].join(', ')}`,
      );
      return sendError(req, res, 200, A2A_ERROR_CODE.VERSION_NOT_SUPPORTED, err);
    }
    const method = String((req.body as { method?: unknown }).method);
    if (requested === VERSION_WITHOUT_HEADER && V1_METHODS.has(method)) {
      // No header and a method only 1.0 has: unambiguous, served as 1.0. Said 0.3: refused.
      if (header === undefined && supported.has(V1)) req.headers['a2a-version'] = V1;
      else
        return sendError(
          req,
          res,
          200,
          A2A_ERROR_CODE.VERSION_NOT_SUPPORTED,
          needsVersion1(`method ${JSON.stringify(method.slice(0, 64))}`, header),
        );
    }
    next();
  };
}

/**
 * The same rule on HTTP+JSON: the 0.3 routes (`/v1/...`) were answered by the compatibility layer
 * before this; any other route exists only in 1.0, so without the header it is served as 1.0, and
 * asked for as `A2A-Version: 0.3` it is refused.
 */
export function restVersionGate(card: AgentCard): RequestHandler {
  const supported = supportedVersions(card, 'HTTP+JSON');
  return (req, res, next) => {
    const header = req.header('A2A-Version') || undefined;
    if (!isLegacyRequest(req)) return next(); // 1.0, or a version the SDK refuses itself
    if (!supported.has(VERSION_WITHOUT_HEADER)) return next();
    // No header on a route 0.3 does not have (its routes were answered above): unambiguous, 1.0.
    if (header === undefined && supported.has(V1)) {
      req.headers['a2a-version'] = V1;
      return next();
    }
    const err = new VersionNotSupportedError(
      `${req.method} ${req.path.slice(0, 128)} is no A2A 0.3 route (those are under /v1): the A2A 1.0 routes need A2A-Version: 1.0 ` +
        `(${header ? `A2A-Version ${header}` : 'a request without A2A-Version'} is A2A 0.3)`,
    );
    sendError(req, res, 400, A2A_ERROR_CODE.VERSION_NOT_SUPPORTED, err);
  };
}
