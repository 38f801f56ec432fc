import { Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import express from 'express';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import { DISPATCHER_DEPS, LOGGER, type DispatcherDeps } from '../core.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { GrantKeys } from './grant-keys.js';
import { GrantSigner } from './grant-signer.js';
import { GrantSigningModule } from './grant-signing.module.js';
import { TokenExchange } from './token-exchange.js';
import { TokenExchangeController } from './token-exchange.controller.js';
import { TeamBindings } from '../teams/team-bindings.js';
import { TeamsModule } from '../teams/teams.module.js';
import { TOOL_AUDIENCE_POLICY, type ToolAudiencePolicy } from './tool-audience.policy.js';

/** Largest token request: a grant and a few short parameters. */
const TOKEN_BODY_LIMIT = '16kb';

/**
 * The token endpoint and the JWKS (docs/dispatcher.md, "Grants and tool tokens"). The
 * {@link TOOL_AUDIENCE_POLICY} is the embedder's (DispatcherOverrides.toolAudiencePolicy), else the
 * team bindings': a team's agent gets its team's tool audiences, a platform agent any.
 */
@Module({
  imports: [GrantSigningModule, TasksModule, TeamsModule],
  controllers: [TokenExchangeController],
  providers: [
    {
      provide: TOOL_AUDIENCE_POLICY,
      useFactory: (deps: DispatcherDeps, teams: TeamBindings): ToolAudiencePolicy => deps.toolAudiencePolicy ?? teams,
      inject: [DISPATCHER_DEPS, TeamBindings],
    },
    {
      provide: TokenExchange,
      useFactory: (
        keys: GrantKeys,
        signer: GrantSigner,
        repo: TaskRepository,
        policy: ToolAudiencePolicy,
        metrics: MeshMetrics,
        logger: Logger,
      ) =>
        new TokenExchange({
          keys,
          issuer: signer.issuer,
          tokenEndpoint: signer.tokenEndpoint,
          taskState: async (taskId, tenant, agentId) => {
            const found = await repo.load(taskId, tenant, agentId);
            return (found?.task.status as { state?: string } | undefined)?.state;
          },
          policy,
          metrics,
          logger,
        }),
      inject: [GrantKeys, GrantSigner, TaskRepository, TOOL_AUDIENCE_POLICY, MeshMetrics, LOGGER],
    },
  ],
  exports: [TOOL_AUDIENCE_POLICY],
})
export class GrantsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // The rest of the dispatcher reads JSON bodies itself; this one route takes a form (RFC 6749 §3.2).
    consumer.apply(express.urlencoded({ extended: false, limit: TOKEN_BODY_LIMIT, parameterLimit: 20 })).forRoutes('oauth/token');
  }
}
