import type { RequestHandler } from 'express';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import type { Authenticator } from '@mesh/auth';
import { CARD_PATH } from './a2a.routes.js';
import { sendError } from './a2a-errors.responder.js';
import { hasBody } from '@mesh/service';
import { isJsonRpc, localsOf } from './a2a-request.context.js';

/**
 * Authenticates the caller from the headers, before any body is read: a caller without a
 * credential is answered 401 at once and never makes the dispatcher buffer a body. The one request
 * served without a credential, the public card (a request without a body), needs none.
 */
export function authenticate(authenticator: Authenticator): RequestHandler {
  return (req, res, next) => {
    const locals = localsOf(res);
    // The card of a public agent is discoverable without a token; everything else needs one, and
    // so does any request with a body (the SDK's own parsers behind the card would read it).
    if (req.path === CARD_PATH && req.header('authorization') === undefined && !hasBody(req)) return next();
    // Node keeps the first of repeated Authorization headers and drops the rest; a proxy in front
    // may check another one. A request with two credentials is refused, whichever would win.
    let credentials = 0;
    for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'authorization') credentials += 1;
    const presented =
      credentials > 1 ? Promise.reject(new Error('repeated Authorization')) : authenticator.authenticate(req.headers.authorization);
    presented.then(
      (principal) => {
        locals.principal = principal;
        next();
      },
      () => {
        res.setHeader('WWW-Authenticate', 'Bearer');
        // The body is never read: the connection closes after the answer instead of draining it.
        if (hasBody(req)) res.setHeader('Connection', 'close');
        const err = new Error(
          credentials > 1
            ? 'authentication refused: send exactly one Authorization header'
            : 'authentication required: send Authorization: Bearer <token or API key>',
        );
        if (isJsonRpc(req)) sendError(req, res, 401, A2A_ERROR_CODE.INVALID_REQUEST, err);
        else res.status(401).json({ error: { code: 401, status: 'UNAUTHENTICATED', message: err.message, details: [] } });
      },
    );
  };
}
