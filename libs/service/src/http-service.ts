import { NestFactory } from '@nestjs/core';
import type { INestApplication, LogLevel } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ServiceLifecycle } from './health.js';

export interface HttpServiceOptions {
  /** Root module of the app (usually a DynamicModule built from validated config). */
  module: unknown;
  port: number;
  host?: string;
  /** JSON body limit, e.g. '1mb'. */
  bodyLimit?: string;
  /** Extra wiring before listen (filters, raw routers, …). */
  configure?: (app: NestExpressApplication) => void | Promise<void>;
}

function nestLogLevels(): LogLevel[] {
  return process.env.LOG_LEVEL === 'debug' ? ['error', 'warn', 'log', 'debug'] : ['error', 'warn'];
}

/** Creates, configures and starts one Nest HTTP application; marks it ready once listening. */
export async function startHttpService(opts: HttpServiceOptions): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(opts.module as never, {
    logger: nestLogLevels(),
    bodyParser: false,
    abortOnError: false,
  });
  app.useBodyParser('json', { limit: opts.bodyLimit ?? '1mb' });
  await opts.configure?.(app);
  await app.listen(opts.port, opts.host ?? '0.0.0.0');
  app.get(ServiceLifecycle).markReady();
  return app;
}
