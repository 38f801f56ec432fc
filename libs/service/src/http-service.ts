import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { pinoHttp } from 'pino-http';
import { createLogger, MeshMetrics, MetricsModule, PinoNestLogger, type Logger } from '@mesh/telemetry';
import { ServiceLifecycle } from './health.js';
import { serveInOrder } from './request-order.js';
import { closeUnreadBodies, deferContinue, hasBody, parseByteSize, refuseMalformedUtf8, withinBodyLimit } from './request-body.js';

export interface HttpServiceOptions {
  /** Service name for logs (defaults to the entry script's folder name). */
  name?: string;
  /** The process's logger (Nest's own lines and access logs); without one, a logger named `name`. */
  logger?: Logger;
  /** Root module of the app (usually a DynamicModule built from validated config). */
  module: unknown;
  port: number;
  /** Address to listen on (the app's HTTP_HOST); default 127.0.0.1, so nothing is exposed unless configured. */
  host?: string;
  /** JSON body limit, e.g. '1mb'. */
  bodyLimit?: string;
  /**
   * false: no app-wide JSON parser; the app's routes read their bodies themselves (the dispatcher
   * authenticates from the headers first, so no caller without a credential makes it buffer a body).
   */
  parseJsonBodies?: boolean;
  /**
   * Authenticates every request that carries a body from its headers before the body is read (see
   * {@link BodyAuthentication}); given the app, so it can use the app's own providers.
   */
  authenticateBodies?: (app: NestExpressApplication) => BodyAuthentication;
  /** The process's metrics; served on GET /metrics and injectable as MeshMetrics. */
  metrics?: MeshMetrics;
  /**
   * Extra wiring before listen (filters, raw routers, …). Microservices connected here
   * (`app.connectMicroservice`) start once the bootstrap hooks ran, before the HTTP port opens.
   */
  configure?: (app: NestExpressApplication) => void | Promise<void>;
  /** Called once the bootstrap hooks ran and the microservices listen, before the HTTP port opens. */
  started?: (app: NestExpressApplication) => void | Promise<void>;
}

/** `apps/<name>/dist/main.js` → `<name>`. */
function serviceNameFromArgv(): string {
  return /apps\/([^/]+)\//.exec(process.argv[1] ?? '')?.[1] ?? 'agent-mesh';
}

const QUIET_PATHS = new Set(['/healthz', '/livez', '/metrics']);

/** How long a client may take to send its headers, and its whole request (a slow client holds a socket). */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;

/** Bounds how long a client may take over its request (Node's defaults: 60 s for headers, 300 s in all). */
export function limitRequestTimes(server: Server): void {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
}

/**
 * How an app authenticates a request from its headers alone. Nest's guards run after the body parser,
 * so without this a caller with no credential makes the service buffer a body up to the limit, and
 * many such callers hold many bodies. No route of a service that sets it takes a body from a caller
 * without a credential: public routes read no body, so a request without one passes on untouched.
 */
export interface BodyAuthentication {
  /** Resolves once the request's credential is accepted; rejects (or throws) with the reason otherwise. */
  authenticate(req: Request): unknown;
  /** Answers the refused request (401, in the app's error format) for the reason `authenticate` gave. */
  refuse(req: Request, res: Response, reason: unknown): void;
}

/**
 * Middleware in front of the body parser: a request with a body is authenticated first; refused, it
 * is answered at once and its connection closed after the answer, so its body is never parsed or
 * held (what arrives of it before the close is discarded): no caller without a credential holds
 * memory here, however many of them there are.
 */
export function authenticateBeforeBody(auth: BodyAuthentication) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!hasBody(req)) return next();
    void Promise.resolve()
      .then(() => auth.authenticate(req))
      .then(
        () => next(),
        (reason: unknown) => {
          res.setHeader('Connection', 'close');
          try {
            auth.refuse(req, res, reason);
          } catch (err) {
            next(err);
          }
        },
      );
  };
}

/**
 * Where a request reached a router mounted under a parameter (`/a2a/:agentId`), the router says so
 * in `res.locals.routePrefix` ({ actual: '/a2a/echo-agent', pattern: '/a2a/:agentId' }).
 */
export interface RoutePrefix {
  actual: string;
  pattern: string;
}

function basePattern(baseUrl: string, res: Response): string {
  const prefix = (res.locals as { routePrefix?: RoutePrefix }).routePrefix;
  return prefix && baseUrl.startsWith(prefix.actual) ? prefix.pattern + baseUrl.slice(prefix.actual.length) : baseUrl;
}

/** A router's root route under a base is the base itself: `/a2a/:agentId`, not `/a2a/:agentId/`. */
const joinRoute = (base: string, path: string) => (path === '/' && base ? base : base + path);

const KNOWN_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/**
 * `mesh_http_requests_total` and `mesh_http_request_duration_seconds` by method, route pattern and
 * status class. The route is the matched pattern (`/a2a/:agentId/tasks/:id`), `unmatched` when no
 * route took the request: a label never carries a raw path, so ids and probes cannot grow the series.
 */
export function countRequests(metrics: MeshMetrics) {
  return (req: Request, res: Response, next: () => void) => {
    if (req.url === '/metrics') return next();
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const route = req.route as { path?: unknown } | undefined;
      const labels = {
        method: KNOWN_METHODS.has(req.method) ? req.method : 'OTHER',
        route: typeof route?.path === 'string' ? joinRoute(basePattern(req.baseUrl, res), route.path) : 'unmatched',
        status_class: `${Math.floor(res.statusCode / 100)}xx`,
      };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

/**
 * Creates, configures and starts one Nest HTTP application with JSON logs (pino, trace ids),
 * `/metrics`, and the app's module; marks it ready once listening.
 */
export async function startHttpService(opts: HttpServiceOptions): Promise<INestApplication> {
  const logger = opts.logger ?? createLogger(opts.name ?? serviceNameFromArgv());
  const metrics = opts.metrics ?? new MeshMetrics();
  @Module({ imports: [opts.module as never, MetricsModule.forMetrics(metrics)] })
  class ServiceRootModule {}
  const app = await NestFactory.create<NestExpressApplication>(ServiceRootModule, {
    logger: new PinoNestLogger(logger),
    bodyParser: false,
    abortOnError: false,
  });
  const bodyLimit = opts.bodyLimit ?? '1mb';
  app.use(serveInOrder());
  app.use(closeUnreadBodies());
  app.use(countRequests(metrics));
  // Access logs are info lines: below that level the middleware would only cost time per request.
  if (logger.isLevelEnabled('info')) app.use(pinoHttp({ logger, autoLogging: { ignore: (req) => QUIET_PATHS.has(req.url ?? '') } }));
  if (opts.authenticateBodies) app.use(authenticateBeforeBody(opts.authenticateBodies(app)));
  if (opts.parseJsonBodies !== false) {
    // No Content-Encoding: bodies this small gain nothing from it, and a few bytes of brotli that
    // decode to the limit cost milliseconds of CPU each, which no budget here bounds.
    const parse = express.json({ limit: bodyLimit, verify: refuseMalformedUtf8, inflate: false });
    app.use(withinBodyLimit(parse, parseByteSize(bodyLimit)));
  }
  await opts.configure?.(app);
  const server = app.getHttpServer() as Server;
  deferContinue(server);
  limitRequestTimes(server);
  if (app.getMicroservices().length > 0) {
    // Their handlers may rely on what the bootstrap hooks start; requests may rely on them.
    await app.init();
    await app.startAllMicroservices();
  }
  await opts.started?.(app);
  await app.listen(opts.port, opts.host ?? '127.0.0.1');
  app.get(ServiceLifecycle).markReady();
  return app;
}
