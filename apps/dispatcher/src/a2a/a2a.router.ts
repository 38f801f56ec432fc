import express, { type Request, type RequestHandler, type Response } from 'express';
import { AgentCard } from '@a2a-js/sdk';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter, legacyRestRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { A2A_ERROR_CODE, RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Authenticator } from '@mesh/auth';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { MeshError, type AgentRecord } from '@mesh/contract';
import { hasBody, type RoutePrefix } from '@mesh/service';
import { buildServedCard } from '../catalog/agent-card.builder.js';
import type { AgentLookup } from '../catalog/agent-catalog.js';
import { DispatcherRequestHandler } from './dispatcher-request-handler.js';
import { PrincipalUser } from './principal-user.js';
import { jsonRpcValidator, legacyRestValidator, restValidator } from './a2a-request.validator.js';
import { hideFaults } from './a2a-fault.guard.js';
import { A2A_MOUNT, CARD_PATH, routeOf } from './a2a.routes.js';
import { LAST_EVENT_ID_HEADER, LAST_EVENT_ID_PARAM, resumePointOf, StreamEventIds } from './stream-event-ids.js';
import { admitWork, chargeBody, effectOf, reserveStreamSlot, type A2aAdmission } from './a2a-admission.gate.js';
import { authenticate } from './a2a-auth.guard.js';
import { readBody } from './a2a-body.reader.js';
import { keepCardPrivate } from './a2a-card.cache.js';
import { validJsonRpcEnvelope } from './a2a-envelope.validator.js';
import { refuseInvalid, refuseLegacyRest, sendError } from './a2a-errors.responder.js';
import { callerTenant, isJsonRpc, localsOf } from './a2a-request.context.js';
import { startServerSpan, withSpan } from './a2a-trace.span.js';
import { jsonRpcVersionGate, normaliseVersion, restVersionGate } from './a2a-version.gate.js';

/** Why a request's `closed` signal aborts: one shared reason (abort() without one builds a DOMException, stack and all, for every request). */
const CALLER_GONE = new MeshError('CANCELLED', 'the caller closed the connection');

/** Everything the A2A edge needs to build one agent's handler. */
export interface A2aRouterOptions extends A2aAdmission {
  authenticator: Authenticator;
  catalog: AgentLookup;
  /** Base URL of this dispatcher as callers reach it. */
  publicUrl: () => string;
  bodyLimit: string;
  cardMaxAgeSeconds: number;
  handlerFor(record: AgentRecord, card: AgentCard): DispatcherRequestHandler;
  /** The service's logger: failures hidden from callers are logged here (`src: a2a`). */
  logger?: Logger;
}

interface AgentEdge {
  key: string;
  router: RequestHandler;
}

/**
 * `/a2a/:agentId/...`: version normalisation, authentication, agent resolution, the byte budget,
 * the body and admission in front of the SDK's own express handlers (JSON-RPC at the base URL,
 * HTTP+JSON routes, the card), one set per agent, rebuilt when the agent's record changes. Failures
 * before the SDK (bad token, unknown agent, unparsable or oversized body) are answered in the
 * binding's own error format. Which request starts work or opens a stream is the route table's
 * decision (a2a.routes.ts).
 */
export function a2aRouter(opts: A2aRouterOptions): express.Router {
  const edges = new Map<string, AgentEdge>();
  const router = express.Router();
  const log = (opts.logger ?? silentLogger).child({ src: 'a2a' });
  const logFault = (err: unknown) => log.error({ err: String(err).slice(0, 2000) }, 'request failed');

  const misspelled = (req: Request, res: Response) =>
    sendError(
      req,
      res,
      404,
      A2A_ERROR_CODE.METHOD_NOT_FOUND,
      new Error(`no A2A route ${req.method} ${req.path.slice(0, 128)} (routes are case-sensitive, without a trailing slash)`),
    );

  const noRoute = (req: Request, res: Response) =>
    sendError(req, res, 404, A2A_ERROR_CODE.METHOD_NOT_FOUND, new Error(`no A2A route ${req.method} ${req.path.slice(0, 128)}`));

  const edgeFor = (record: AgentRecord): AgentEdge => {
    const key = `${record.version}:${record.updatedAt}`;
    const cached = edges.get(record.id);
    if (cached?.key === key) return cached;
    const card = buildServedCard(record, opts.publicUrl());
    const cardJson = AgentCard.toJSON(card);
    const handler = hideFaults(opts.handlerFor(record, card), logFault);
    const userBuilder = async (req: Request) => {
      const locals = localsOf(req.res!);
      return new PrincipalUser(locals.principal!, locals.closed, locals.streamIds, locals.times);
    };
    const agentRouter = express.Router();
    const cardOptions = { agentCardProvider: async () => cardJson as unknown as AgentCard, cache: { maxAge: opts.cardMaxAgeSeconds } };
    const legacyCard = legacyAgentCardRouter({ agentCardProvider: async () => card, cache: cardOptions.cache });
    // The 0.3 card shape only when asked for (`A2A-Version: 0.3`, or `?A2A-Version=0.3`): a card
    // fetched without the header stays the 1.0 card every 1.0 client reads.
    const privateCard = record.visibility !== 'public';
    agentRouter.use(CARD_PATH, (req, res, next) => {
      res.append('Vary', 'A2A-Version');
      if (privateCard) keepCardPrivate(res);
      if (req.header('A2A-Version') === undefined) return next();
      legacyCard(req, res, next);
    });
    agentRouter.use(CARD_PATH, agentCardHandler(cardOptions));
    // Mounted on the exact base path only, so its content-type guard never sees REST routes.
    agentRouter.post(
      '/',
      validJsonRpcEnvelope,
      jsonRpcVersionGate(card),
      jsonRpcValidator(refuseInvalid, callerTenant),
      jsonRpcHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }),
    );
    // 0.3 routes (`/v1/...`) first: the compatibility layer passes every other request on.
    agentRouter.use(
      legacyRestValidator((_req, res, err) => refuseLegacyRest(res, err)),
      legacyRestRouter({ requestHandler: handler, userBuilder }),
      restVersionGate(card),
      restValidator(refuseInvalid, callerTenant),
      restHandler({ requestHandler: handler, userBuilder }),
    );
    agentRouter.use(noRoute);
    const edge = { key, router: agentRouter };
    edges.set(record.id, edge);
    return edge;
  };

  /** The agent the path names, as the caller may see it; undefined (answered 404) when none. */
  const agentOf = (req: Request, res: Response): AgentRecord | undefined => {
    const locals = localsOf(res);
    const agentId = String((req.params as Record<string, string>).agentId);
    locals.agent ??= opts.catalog.resolve(agentId, locals.principal?.tenant);
    if (locals.agent) return locals.agent;
    sendError(
      req,
      res,
      404,
      A2A_ERROR_CODE.METHOD_NOT_FOUND,
      Object.assign(new Error(`agent "${agentId}" not found`), { name: 'AgentNotFound' }),
    );
    return undefined;
  };

  /**
   * An HTTP+JSON request's agent and route (spelled as the table has it), refused before a body
   * is charged or read (no 100 Continue invites one). A JSON-RPC request's agent is resolved once
   * its body is read, so that the answer carries the request's id.
   */
  const findAgent: RequestHandler = (req, res, next) => {
    if (isJsonRpc(req)) return next();
    if (!agentOf(req, res)) return;
    const match = routeOf(req);
    // Express would serve `/MESSAGE:SEND` or `/tasks/x:SUBSCRIBE/` as the route; admission and the
    // stream cap decide by the route table, so only exact spellings go on.
    if (match.kind === 'misspelled') return misspelled(req, res);
    // No route at all: answered as the routers behind would, before a body is charged or invited.
    if (match.kind === 'other' && hasBody(req)) return noRoute(req, res);
    next();
  };

  const resolveAgent: RequestHandler = (req, res, next) => {
    const locals = localsOf(res);
    const record = agentOf(req, res);
    if (!record) return;
    const effect = effectOf(req);
    if (!effect) return misspelled(req, res);
    // The metrics' route label: the pattern, never the agent id (libs/service countRequests), and
    // the mount as the route table spells it (express matched `/A2A` too).
    (res.locals as { routePrefix?: RoutePrefix }).routePrefix = { actual: req.baseUrl, pattern: `${A2A_MOUNT}/:agentId` };
    const span = startServerSpan(req, res, record, locals.principal?.tenant);
    // Streams stop their work when the caller goes away (the SDK's SSE writer would go on pulling).
    const connection = new AbortController();
    locals.closed = connection.signal;
    res.once('close', () => connection.abort(CALLER_GONE));
    if (effect.opensStream) {
      // Every event of a stream carries its number in the task's stream as its SSE id.
      const resumeAfter = resumePointOf(req.header(LAST_EVENT_ID_HEADER), req.query[LAST_EVENT_ID_PARAM]);
      if (resumeAfter instanceof RequestMalformedError) {
        sendError(req, res, isJsonRpc(req) ? 200 : 400, A2A_ERROR_CODE.INVALID_PARAMS, resumeAfter);
        return;
      }
      locals.streamIds = new StreamEventIds(resumeAfter);
      locals.streamIds.attach(res);
    }
    if (!reserveStreamSlot(opts, req, res, record, effect)) return;
    withSpan(span, () => admitWork(opts, req, res, record, effect, () => edgeFor(record).router(req, res, next), next));
  };

  router.use(
    '/:agentId',
    normaliseVersion,
    authenticate(opts.authenticator),
    findAgent,
    chargeBody(opts, opts.bodyLimit),
    readBody(opts.bodyLimit),
    resolveAgent,
  );

  return router;
}
