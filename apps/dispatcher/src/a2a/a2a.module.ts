import { Module } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import type { Authenticator } from '@mesh/auth';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import { Admission } from '../admission/admission.js';
import { AdmissionModule } from '../admission/admission.module.js';
import { CatalogModule } from '../catalog/catalog.module.js';
import { DirectoryAgentLookup } from '../catalog/agent-catalog.js';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { AUTHENTICATOR, DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { EventsModule } from '../events/events.module.js';
import { TenantStreamSlots } from '../events/stream-slots.js';
import { TaskEventFollower } from '../events/task-event-follower.js';
import { TaskChangeNotifier } from '../tasks/task-change-notifier.js';
import { TaskChangesModule } from '../tasks/task-changes.module.js';
import { TaskCommits } from '../tasks/task-commits.js';
import { PushModule } from '../push/push.module.js';
import { PushService } from '../push/push.service.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TaskAcceptance } from '../tasks/task-acceptance.js';
import { TaskEndings } from '../tasks/task-endings.js';
import { TaskReads } from '../tasks/task-reads.js';
import { a2aTasksOf, type A2aTasks } from './a2a-tasks.js';
import { a2aRouter } from './a2a.router.js';
import { DispatcherRequestHandler } from './dispatcher-request-handler.js';

/** The `/a2a` router (mounted by startDispatcher with the other raw express handlers). */
export const A2A_ROUTER = Symbol('dispatcher.a2a-router');

interface A2aServices {
  authenticator: Authenticator;
  catalog: DirectoryAgentLookup;
  tasks: A2aTasks;
  changes: TaskChangeNotifier;
  commits: TaskCommits;
  push: PushService;
  admission: Admission;
  metrics: MeshMetrics;
  http: HttpAdapterHost;
}

function a2aRouterOf(s: A2aServices, config: DispatcherConfig, logger: Logger): RequestHandler {
  const streamSlots = new TenantStreamSlots(config.DISPATCHER_MAX_STREAMS_PER_TENANT);
  const follower = new TaskEventFollower(s.tasks, s.changes, { maxMs: config.DISPATCHER_STREAM_MAX_MS });
  const { metrics } = s;
  // Known only once listening when the port is 0 (tests); cards are built on first use.
  let listeningUrl: string | undefined;
  const publicUrl = () => {
    if (config.DISPATCHER_PUBLIC_URL) return config.DISPATCHER_PUBLIC_URL;
    const address = s.http.httpAdapter?.getHttpServer().address() as AddressInfo | null | undefined;
    if (!address) return `http://localhost:${config.DISPATCHER_PORT}`;
    return (listeningUrl ??= `http://localhost:${address.port}`);
  };
  return a2aRouter({
    authenticator: s.authenticator,
    catalog: s.catalog,
    publicUrl,
    bodyLimit: config.DISPATCHER_BODY_LIMIT,
    cardMaxAgeSeconds: config.DISPATCHER_CARD_MAX_AGE_S,
    logger,
    handlerFor: (record, card) =>
      new DispatcherRequestHandler(
        card,
        record,
        { tasks: s.tasks, commits: s.commits, push: s.push, follower },
        {
          maxBlockingMs: config.DISPATCHER_BLOCKING_TIMEOUT_MS,
          changes: s.changes,
          defaultDeadlineMs: config.DISPATCHER_DEFAULT_DEADLINE_MS,
          maxDeadlineMs: config.DISPATCHER_MAX_DEADLINE_MS,
          metrics,
        },
      ),
    admit: async (tenant, record) => {
      const refusal = await s.admission.check(tenant, record);
      if (refusal) metrics.admissionRefusals.inc({ tenant, agent: record.id, reason: refusal.reason });
      return refusal;
    },
    chargeBody: (tenant, declaredBytes, agentId) => {
      const charge = s.admission.chargeBody(tenant, declaredBytes);
      if ('settle' in charge) return charge;
      // Counted by agent only when the path names one the tenant sees (a label never carries a raw path).
      const agent = s.catalog.resolve(agentId, tenant)?.id ?? '_unknown';
      metrics.admissionRefusals.inc({ tenant, agent, reason: charge.reason });
      return charge;
    },
    reserveStream: (tenant, record) => {
      const release = streamSlots.reserve(tenant);
      if (release) return release;
      metrics.admissionRefusals.inc({ tenant, agent: record.id, reason: 'TOO_MANY_STREAMS' });
      return {
        httpStatus: 429,
        reason: 'TOO_MANY_STREAMS',
        message: `tenant "${tenant}" has ${streamSlots.maxPerTenant} streams open, the most allowed; close one or retry later`,
        retryAfterSeconds: config.DISPATCHER_RETRY_AFTER_S,
      };
    },
  });
}

/** The A2A front door: one request handler per agent over the task store, admission and streams. */
@Module({
  imports: [TasksModule, EventsModule, TaskChangesModule, PushModule, CatalogModule, AdmissionModule],
  providers: [
    {
      provide: A2A_ROUTER,
      useFactory: (
        authenticator: Authenticator,
        catalog: DirectoryAgentLookup,
        acceptance: TaskAcceptance,
        endings: TaskEndings,
        reads: TaskReads,
        changes: TaskChangeNotifier,
        commits: TaskCommits,
        push: PushService,
        admission: Admission,
        metrics: MeshMetrics,
        http: HttpAdapterHost,
        config: DispatcherConfig,
        logger: Logger,
      ) =>
        a2aRouterOf(
          { authenticator, catalog, tasks: a2aTasksOf(acceptance, endings, reads), changes, commits, push, admission, metrics, http },
          config,
          logger,
        ),
      inject: [
        AUTHENTICATOR,
        DirectoryAgentLookup,
        TaskAcceptance,
        TaskEndings,
        TaskReads,
        TaskChangeNotifier,
        TaskCommits,
        PushService,
        Admission,
        MeshMetrics,
        HttpAdapterHost,
        DISPATCHER_CONFIG,
        LOGGER,
      ],
    },
  ],
  exports: [A2A_ROUTER],
})
export class A2aModule {}
