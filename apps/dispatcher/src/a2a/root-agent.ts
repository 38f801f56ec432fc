import type { ErrorRequestHandler, Request, RequestHandler } from 'express';

/**
 * The A2A paths of an agent relative to its base URL: the JSON-RPC endpoint, the card, the 1.0
 * HTTP+JSON routes (optionally under a `/{tenant}` prefix) and the 0.3 ones under `/v1`.
 */
const JSON_RPC = /^\/$/;
const CARD = /^\/\.well-known\/agent-card\.json$/;
const REST = /^(?:\/[^/]+)?\/(?:message:(?:send|stream)|tasks(?:\/.*)?|extendedAgentCard)$/;
const LEGACY_CARD = /^\/v1\/card$/;

/** Whether `req` asks for an A2A path at the host root (never the dispatcher's own `/a2a`, `/healthz`…). */
function isRootA2a(req: Request): boolean {
  const path = req.path;
  if (path.startsWith('/a2a/')) return false;
  if (JSON_RPC.test(path)) return req.method === 'POST';
  return CARD.test(path) || REST.test(path) || LEGACY_CARD.test(path);
}

/** `req.url` under the agent's own base, relative to `prefix` (`/a2a/{id}/…`, or `/{id}/…` inside the `/a2a` mount). */
function moveUnder(req: Request, prefix: string): void {
  req.url = `${prefix}${req.url === '/' || req.url.startsWith('/?') ? req.url.slice(1) : req.url}`;
}

/**
 * Serves one agent (DISPATCHER_ROOT_AGENT) at the host root too, for clients that take a host
 * rather than an agent's URL (the A2A TCK reads `/.well-known/agent-card.json` at the root and
 * posts JSON-RPC to `/`): its A2A paths are re-dispatched to `/a2a/{agentId}/…`, so they get the
 * same authentication, visibility, admission and errors as there; the card it serves names the
 * agent's own base URL. Mount `rewrite` before the `/a2a` router and `bodyErrors` after its error
 * handler (a body the app-wide parser refused fails before the rewrite ran).
 */
export function rootAgentRoutes(
  agentId: string,
  a2aBodyErrors: ErrorRequestHandler,
): { rewrite: RequestHandler; bodyErrors: ErrorRequestHandler } {
  const base = `/a2a/${encodeURIComponent(agentId)}`;
  return {
    rewrite: (req, _res, next) => {
      if (isRootA2a(req)) moveUnder(req, base);
      next();
    },
    bodyErrors: (err, req, res, next) => {
      if (!isRootA2a(req)) return next(err);
      // The `/a2a` error handler reads paths relative to its mount: `/{agentId}/…`.
      moveUnder(req, `/${encodeURIComponent(agentId)}`);
      a2aBodyErrors(err, req, res, next);
    },
  };
}
