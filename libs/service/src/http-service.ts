import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { pinoHttp } from 'pino-http';
import { createLogger, MeshMetrics, MetricsModule, PinoNestLogger } from '@mesh/telemetry';
import { ServiceLifecycle } from './health.js';

export interface HttpServiceOptions {
  /** Service name for logs (defaults to the entry script's folder name). */
  name?: string;
  /** Root module of the app (usually a DynamicModule built from validated config). */
  module: unknown;
  port: number;
  host?: string;
  /** JSON body limit, e.g. '1mb'. */
  bodyLimit?: string;
  /** body-parser `verify` of the JSON parser: throw to refuse the raw (decoded) body. */
  bodyVerify?: (req: unknown, res: unknown, buf: Buffer, encoding: string) => void;
  /** The process's metrics; served on GET /metrics and injectable as MeshMetrics. */
  metrics?: MeshMetrics;
  /** Extra wiring before listen (filters, raw routers, …). */
  configure?: (app: NestExpressApplication) => void | Promise<void>;
}

/** `apps/<name>/dist/main.js` → `<name>`. */
function serviceNameFromArgv(): string {
  return /apps\/([^/]+)\//.exec(process.argv[1] ?? '')?.[1] ?? 'agent-mesh';
}

const QUIET_PATHS = new Set(['/healthz', '/livez', '/metrics']);

/**
 * Creates, configures and starts one Nest HTTP application with JSON logs (pino, trace ids),
 * `/metrics`, and the app's module; marks it ready once listening.
 */
export async function startHttpService(opts: HttpServiceOptions): Promise<INestApplication> {
  const logger = createLogger(opts.name ?? serviceNameFromArgv(), process.env.LOG_LEVEL ?? 'warn');
  const metrics = opts.metrics ?? new MeshMetrics();
  @Module({ imports: [opts.module as never, MetricsModule.forMetrics(metrics)] })
  class ServiceRootModule {}
  const app = await NestFactory.create<NestExpressApplication>(ServiceRootModule, {
    logger: new PinoNestLogger(logger),
    bodyParser: false,
    abortOnError: false,
  });
  // Access logs are info lines: below that level the middleware would only cost time per request.
  if (logger.isLevelEnabled('info')) app.use(pinoHttp({ logger, autoLogging: { ignore: (req) => QUIET_PATHS.has(req.url ?? '') } }));
  app.useBodyParser('json', { limit: opts.bodyLimit ?? '1mb', ...(opts.bodyVerify ? { verify: opts.bodyVerify } : {}) });
  await opts.configure?.(app);
  await app.listen(opts.port, opts.host ?? '0.0.0.0');
  app.get(ServiceLifecycle).markReady();
  return app;
}
