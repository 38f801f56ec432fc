import {
  Inject,
  Module,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import express, { type RequestHandler } from 'express';
import type { DataSource } from 'typeorm';
import { parseByteSize, refuseMalformedUtf8, withinBodyLimit } from '@mesh/service';
import type { Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DATA_SOURCE, DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { TeamBindings } from './team-bindings.js';
import { TeamRegistry } from './team-registry.js';
import { checkTeamsCredential, TEAMS_DEPS, TeamsController, type TeamsDeps } from './teams.controller.js';

/** Largest `/ops/teams` body: a binding is a few agents and keys. */
const TEAMS_BODY_LIMIT = '64kb';

/**
 * The app parses no bodies (the A2A router reads its own once the caller is known): a binding's
 * body is parsed here, and only for a caller with the ops token; anyone else is answered by the
 * controller from the headers alone. A malformed body is a 400 `{ error }`.
 */
function teamsBodies(token: string | undefined): RequestHandler {
  const parse = withinBodyLimit(
    express.json({ limit: TEAMS_BODY_LIMIT, verify: refuseMalformedUtf8, inflate: false }),
    parseByteSize(TEAMS_BODY_LIMIT),
  );
  return (req, res, next) => {
    try {
      checkTeamsCredential(req, token);
    } catch {
      return next();
    }
    parse(req, res, (err?: unknown) => {
      if (!err) return next();
      const status = (err as { status?: number }).status ?? 400;
      res.status(status).json({ error: `request body: ${err instanceof Error ? err.message : String(err)}` });
    });
  };
}

/**
 * Team bindings: the registry (Postgres), this replica's snapshot of it (read at bootstrap, before
 * the projector consumes, then refreshed) and the `/ops/teams` endpoints.
 */
@Module({
  controllers: [TeamsController],
  providers: [
    { provide: TeamRegistry, useFactory: (ds: DataSource) => new TeamRegistry(ds), inject: [DATA_SOURCE] },
    {
      provide: TeamBindings,
      useFactory: (registry: TeamRegistry, config: DispatcherConfig, logger: Logger) =>
        new TeamBindings(registry, { refreshMs: config.DISPATCHER_TEAMS_REFRESH_MS, logger }),
      inject: [TeamRegistry, DISPATCHER_CONFIG, LOGGER],
    },
    {
      provide: TEAMS_DEPS,
      useFactory: (registry: TeamRegistry, bindings: TeamBindings, config: DispatcherConfig): TeamsDeps => ({
        registry,
        bindings,
        token: config.DISPATCHER_OPS_TOKEN,
      }),
      inject: [TeamRegistry, TeamBindings, DISPATCHER_CONFIG],
    },
  ],
  exports: [TeamBindings],
})
export class TeamsModule implements NestModule, OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(TeamBindings) private readonly bindings: TeamBindings,
    @Inject(DISPATCHER_CONFIG) private readonly config: DispatcherConfig,
  ) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(teamsBodies(this.config.DISPATCHER_OPS_TOKEN)).forRoutes(TeamsController);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.bindings.start();
  }

  onApplicationShutdown(): void {
    this.bindings.stop();
  }
}
