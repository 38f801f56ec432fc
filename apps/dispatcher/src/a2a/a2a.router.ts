import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AgentCard } from '@a2a-js/sdk';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter, legacyRestRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { toLegacyHTTPError } from '@a2a-js/sdk/compat/v0_3/server';
import {
  A2A_ERROR_CODE,
  ContentTypeNotSupportedError,
  RequestMalformedError,
  toJsonRpcError,
  toRestErrorBody,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';
import type { Authenticator, Principal } from '@mesh/auth';
import { context, isSpanContextValid, propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { silentLogger, SpanAttr, tracer, type Logger } from '@mesh/telemetry';
import { MeshError, type AgentRecord } from '@mesh/contract';
import { refuseMalformedUtf8, type RoutePrefix } from '@mesh/service';
import { buildServedCard } from '../catalog/agent-card.builder.js';
import type { AgentLookup } from '../catalog/agent-catalog.js';
import { DispatcherRequestHandler } from './dispatcher-request-handler.js';
import { PrincipalUser } from './principal-user.js';
import type { BodyCharge, Refusal } from '../admission/admission.js';
import { isLegacyRequest, jsonRpcValidator, legacyRestValidator, restValidator, type Refuse } from './a2a-request.validator.js';
import { A2A_PARAMS } from './a2a-request.schemas.js';
import { hideFaults } from './a2a-fault.guard.js';
import { A2A_MOUNT, CARD_PATH, routeOf } from './a2a.routes.js';
import { parseByteSize } from '../config/dispatcher.config.js';
import { LAST_EVENT_ID_HEADER, LAST_EVENT_ID_PARAM, resumePointOf, StreamEventIds } from './stream-event-ids.js';

/** Why a request's `closed` signal aborts: one shared reason (abort() without one builds a DOMException, stack and all, for every request). */
const CALLER_GONE = new MeshError('CANCELLED', 'the caller closed the connection');

/** Everything the A2A edge needs to build one agent's handler. */
export interface A2aRouterOptions {
  authenticator: Authenticator;
  catalog: AgentLookup;
  /** Base URL of this dispatcher as callers reach it. */
  publicUrl: () => string;
  bodyLimit: string;
  cardMaxAgeSeconds: number;
  handlerFor(record: AgentRecord, card: AgentCard): DispatcherRequestHandler;
  /** Admission control of new work; undefined = admitted. */
  admit?(tenant: string, record: AgentRecord): Promise<Refusal | undefined>;
  /**
   * Charges a request body to the tenant's byte budget before it is read (`declaredBytes`: the
   * Content-Length, undefined for a chunked body; `agentId` as the path names it): the refusal, or
   * the charge to settle with the bytes actually read.
   */
  chargeBody?(tenant: string, declaredBytes: number | undefined, agentId: string): Refusal | BodyCharge;
  /**
   * Takes one of the tenant's open-stream slots for a streaming request (its release is called
   * when the response closes, however the stream ended), or the refusal when none is left.
   */
  reserveStream?(tenant: string, record: AgentRecord): (() => void) | Refusal;
  /** The service's logger: failures hidden from callers are logged here (`src: a2a`). */
  logger?: Logger;
}

const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream']);
const STREAM_METHODS = new Set(['SendStreamingMessage', 'SubscribeToTask', 'message/stream', 'tasks/resubscribe']);

/**
 * What a request does to the dispatcher: start work (SendMessage / SendStreamingMessage, 0.3
 * message/send, message/stream) and hold a stream open (SendStreamingMessage / SubscribeToTask,
 * 0.3 message/stream, tasks/resubscribe) — by its JSON-RPC method, else by the route table.
 * Undefined: a path the table refuses (spelled unlike its route).
 */
function effectOf(req: Request): { startsWork: boolean; opensStream: boolean } | undefined {
  if (isJsonRpc(req)) {
    const body = req.body as { method?: unknown; id?: unknown } | undefined;
    // A notification (no id) is never run (answered 204 by the envelope check): it starts nothing.
    if (typeof body !== 'object' || body === null || !('id' in body)) return { startsWork: false, opensStream: false };
    const method = String(body.method);
    return { startsWork: SEND_METHODS.has(method), opensStream: STREAM_METHODS.has(method) };
  }
  const match = routeOf(req);
  if (match.kind === 'misspelled') return undefined;
  return match.kind === 'route' ? match : { startsWork: false, opensStream: false };
}

/**
 * JSON-RPC code of a retryable refusal (HTTP 429/503 + Retry-After; ErrorInfo.reason says which):
 * a server-defined code (-32000..-32099) outside A2A's own, since the caller did nothing wrong and
 * the server did not fail either.
 */
export const RETRY_LATER_CODE = -32029;

/** A refusal as HTTP 429/503 + Retry-After, with an A2A error body (ErrorInfo says why). */
function sendRefusal(req: Request, res: Response, r: Refusal): void {
  const info = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: r.reason,
    domain: 'mesh.dispatcher',
    metadata: { retryAfterSeconds: String(r.retryAfterSeconds) },
  };
  res.setHeader('Retry-After', String(r.retryAfterSeconds));
  if (isJsonRpc(req)) {
    const body = req.body as { id?: unknown } | undefined;
    const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
    res.status(r.httpStatus).json({ jsonrpc: '2.0', id, error: { code: RETRY_LATER_CODE, message: r.message, data: [info] } });
  } else {
    const status = r.httpStatus === 429 ? 'RESOURCE_EXHAUSTED' : 'UNAVAILABLE';
    res.status(r.httpStatus).json({ error: { code: r.httpStatus, status, message: r.message, details: [info] } });
  }
}

interface AgentEdge {
  key: string;
  router: RequestHandler;
}

type Locals = {
  principal?: Principal;
  agent?: AgentRecord;
  closed?: AbortSignal;
  streamIds?: StreamEventIds;
  /** The body's charge to the tenant's byte budget, and the bytes the parser read. */
  bodyCharge?: BodyCharge;
  bodyBytes?: number;
};
const callerTenant = (req: Request) => (req.res?.locals as Locals | undefined)?.principal?.tenant;

/** Whether a request announces a body (a length above 0, or chunks). */
const hasBody = (req: Request) => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** JSON-RPC is a POST to the agent's base URL; everything else under it is HTTP+JSON or the card. */
const isJsonRpc = (req: Request) => req.method === 'POST' && (req.path === '/' || req.path === '');

function sendError(req: Request, res: Response, httpStatus: number, jsonRpcCode: number, err: Error, jsonRpc = isJsonRpc(req)): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  if (jsonRpc) {
    const body = req.body as { id?: unknown } | undefined;
    const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
    const mapped = toJsonRpcError(err);
    res.status(httpStatus).json({ jsonrpc: '2.0', id, error: { ...mapped, code: jsonRpcCode } });
  } else {
    res.status(httpStatus).type('application/json').json(toRestErrorBody(err, httpStatus));
  }
}

/** A request that failed validation: JSON-RPC -32602 (HTTP 200), HTTP+JSON 400 INVALID_ARGUMENT. */
const refuseInvalid: Refuse = (req, res, err) => sendError(req, res, isJsonRpc(req) ? 200 : 400, A2A_ERROR_CODE.INVALID_PARAMS, err);

/**
 * JSON-RPC 2.0 says a parsed body that is not a Request object (batch, wrong `jsonrpc`, no
 * method, bad id type) is -32600 Invalid Request; the SDK would report -32602, so the envelope is
 * checked here. Params and everything after stay with the SDK.
 */
const validJsonRpcEnvelope: RequestHandler = (req, res, next) => {
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
function jsonRpcVersionGate(card: AgentCard): RequestHandler {
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
function restVersionGate(card: AgentCard): RequestHandler {
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

/**
 * The card of an agent only its own tenant sees: the SDK's card handlers mark every card `public`,
 * which lets a shared cache store it (despite the request's Authorization) and hand it to anyone.
 * Its Cache-Control is made `private` (a browser may keep it, no shared cache), and it varies by
 * the credential that was allowed to see it.
 */
function keepCardPrivate(res: Response): void {
  res.append('Vary', 'Authorization');
  const setHeader = res.setHeader.bind(res);
  res.setHeader = ((name: string, value: number | string | readonly string[]) =>
    setHeader(
      name,
      name.toLowerCase() === 'cache-control'
        ? [
            'private',
            ...String(value)
              .split(/,\s*/)
              .filter((d) => d !== 'public'),
          ].join(', ')
        : value,
    )) as Response['setHeader'];
}

/** A refusal of a 0.3 HTTP+JSON request, in 0.3's bare error body (`{code, message, data}`). */
function refuseLegacyRest(res: Response, err: Error): void {
  res.status(400).type('application/json').json(toLegacyHTTPError(err));
}

/**
 * `/a2a/:agentId/...`: version normalisation, authentication and agent resolution in front of
 * the SDK's own express handlers (JSON-RPC at the base URL, HTTP+JSON routes, the card), one set
 * per agent, rebuilt when the agent's record changes. Failures before the SDK (bad token, unknown
 * agent, unparsable or oversized body) are answered in the binding's own error format.
 */
export function a2aRouter(opts: A2aRouterOptions): express.Router {
  const edges = new Map<string, AgentEdge>();
  const router = express.Router();
  const log = (opts.logger ?? silentLogger).child({ src: 'a2a' });
  const logFault = (err: unknown) => log.error({ err: String(err).slice(0, 2000) }, 'request failed');

  const edgeFor = (record: AgentRecord): AgentEdge => {
    const key = `${record.version}:${record.updatedAt}`;
    const cached = edges.get(record.id);
    if (cached?.key === key) return cached;
    const card = buildServedCard(record, opts.publicUrl());
    const cardJson = AgentCard.toJSON(card);
    const handler = hideFaults(opts.handlerFor(record, card), logFault);
    const userBuilder = async (req: Request) => {
      const locals = req.res!.locals as Locals;
      return new PrincipalUser(locals.principal!, locals.closed, locals.streamIds);
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
    agentRouter.use((req: Request, res: Response) =>
      sendError(req, res, 404, A2A_ERROR_CODE.METHOD_NOT_FOUND, new Error(`no A2A route ${req.method} ${req.path}`)),
    );
    const edge = { key, router: agentRouter };
    edges.set(record.id, edge);
    return edge;
  };

  // A2A-Version: a patch (1.0.1) is the same version; the query parameter stands in for the header.
  const normaliseVersion: RequestHandler = (req, _res, next) => {
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

  const authenticate: RequestHandler = (req, res, next) => {
    const locals = res.locals as Locals;
    // The card of a public agent is discoverable without a token; everything else needs one.
    if (req.path === CARD_PATH && req.header('authorization') === undefined) return next();
    // Node keeps the first of repeated Authorization headers and drops the rest; a proxy in front
    // may check another one. A request with two credentials is refused, whichever would win.
    let credentials = 0;
    for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'authorization') credentials += 1;
    const presented =
      credentials > 1 ? Promise.reject(new Error('repeated Authorization')) : opts.authenticator.authenticate(req.headers.authorization);
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

  const resolveAgent: RequestHandler = (req, res, next) => {
    const locals = res.locals as Locals;
    const agentId = String((req.params as Record<string, string>).agentId);
    const record = opts.catalog.resolve(agentId, locals.principal?.tenant);
    if (!record) {
      sendError(
        req,
        res,
        404,
        A2A_ERROR_CODE.METHOD_NOT_FOUND,
        Object.assign(new Error(`agent "${agentId}" not found`), { name: 'AgentNotFound' }),
      );
      return;
    }
    // Express would serve `/MESSAGE:SEND` or `/tasks/x:SUBSCRIBE/` as the route; admission and the
    // stream cap decide by the route table, so only exact spellings go on.
    const effect = effectOf(req);
    if (!effect) {
      sendError(
        req,
        res,
        404,
        A2A_ERROR_CODE.METHOD_NOT_FOUND,
        new Error(`no A2A route ${req.method} ${req.path.slice(0, 128)} (routes are case-sensitive, without a trailing slash)`),
      );
      return;
    }
    locals.agent = record;
    // The metrics' route label: the pattern, never the agent id (libs/service countRequests), and
    // the mount as the route table spells it (express matched `/A2A` too).
    (res.locals as { routePrefix?: RoutePrefix }).routePrefix = { actual: req.baseUrl, pattern: `${A2A_MOUNT}/:agentId` };
    // The server span of the A2A request: everything it causes (the command, the worker's turn, its
    // tool calls) continues this trace through the outbox row and the message headers.
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer().startSpan(
      `${req.method} /a2a/{agentId}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          'url.path': req.originalUrl.split('?')[0],
          [SpanAttr.agentId]: record.id,
          [SpanAttr.genAiAgentId]: record.id,
          ...(locals.principal ? { [SpanAttr.tenant]: locals.principal.tenant } : {}),
        },
      },
      parent,
    );
    // The caller can quote it to find this request's trace (in Jaeger: search by trace id). An id,
    // never authority: it grants nothing and is derived from nothing the caller must be trusted for.
    if (isSpanContextValid(span.spanContext())) res.setHeader('X-Trace-Id', span.spanContext().traceId);
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
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
    if (opts.reserveStream && locals.principal && effect.opensStream) {
      const slot = opts.reserveStream(locals.principal.tenant, record);
      if (typeof slot !== 'function') {
        sendRefusal(req, res, slot);
        return;
      }
      res.once('close', slot);
    }
    context.with(trace.setSpan(parent, span), () => {
      if (opts.admit && locals.principal && effect.startsWork) {
        opts
          .admit(locals.principal.tenant, record)
          .then((refusal) => (refusal ? sendRefusal(req, res, refusal) : edgeFor(record).router(req, res, next)), next);
        return;
      }
      edgeFor(record).router(req, res, next);
    });
  };

  // Bodies are read only once the caller is authenticated (from the headers): a caller without a
  // credential is answered 401 at once and never makes the dispatcher buffer a body. The one request
  // served without a credential, the public card, needs no body.
  // application/json as the service parsers read it everywhere (objects and arrays); A2A's own media type leniently.
  const verify = (req: Request, res: Response, buf: Buffer) => {
    (res.locals as Locals).bodyBytes = buf.length;
    refuseMalformedUtf8(req, res, buf);
  };
  const parseJson = express.json({ limit: opts.bodyLimit, verify });
  const parseA2aJson = express.json({ type: 'application/a2a+json', limit: opts.bodyLimit, strict: false, verify });
  const readBody: RequestHandler = (req, res, next) => {
    const locals = res.locals as Locals;
    if (!locals.principal) return next();
    parseJson(req, res, (err?: unknown) => {
      if (err) return next(err);
      parseA2aJson(req, res, (err2?: unknown) => {
        if (err2) return next(err2);
        locals.bodyCharge?.settle(locals.bodyBytes ?? 0);
        next();
      });
    });
  };

  // The byte budget is charged from the headers, before the body is read: a refused body is never
  // parsed. One within the body limit is drained unread (the connection stays usable); one larger
  // or of unannounced length closes the connection instead of being read at all.
  const maxBodyBytes = parseByteSize(opts.bodyLimit);
  const chargeBody: RequestHandler = (req, res, next) => {
    const locals = res.locals as Locals;
    if (!opts.chargeBody || !locals.principal || !hasBody(req)) return next();
    const declared = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length']) : undefined;
    const charge = opts.chargeBody(locals.principal.tenant, declared, String((req.params as Record<string, string>).agentId));
    if ('settle' in charge) {
      locals.bodyCharge = charge;
      return next();
    }
    if (declared !== undefined && declared <= maxBodyBytes) req.resume();
    else res.setHeader('Connection', 'close');
    sendRefusal(req, res, charge);
  };

  router.use('/:agentId', normaliseVersion, authenticate, chargeBody, readBody, resolveAgent);

  return router;
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
    const e = err as { type?: string; status?: number; message?: string };
    // Relative to `/a2a`: a JSON-RPC request is a POST to `/{agentId}`.
    const jsonRpc = req.method === 'POST' && /^\/[^/]+\/?$/.test(req.path);
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
