import { Inject, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import { CatalogModule } from '../catalog/catalog.module.js';
import { DirectoryAgentLookup } from '../catalog/agent-catalog.js';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { TaskChangesModule } from '../tasks/task-changes.module.js';
import { TaskCommits } from '../tasks/task-commits.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TaskRepository } from '../tasks/task.repository.js';
import { TaskEndings } from '../tasks/task-endings.js';
import { TurnRows } from '../tasks/turn-rows.js';
import { TaskTree } from './task-tree.js';
import { FleetModule } from '../fleet/fleet.module.js';
import { SweepLease } from '../fleet/sweep-lease.js';
import { DelegationService } from './delegation.service.js';
import { AdmissionModule } from '../admission/admission.module.js';
import { Admission } from '../admission/admission.js';

/** Delegation through the mesh: children created, waited for without a worker, parents resumed. */
@Module({
  imports: [TasksModule, CatalogModule, TaskChangesModule, FleetModule, AdmissionModule],
  providers: [
    {
      provide: DelegationService,
      useFactory: (
        repo: TaskRepository,
        turns: TurnRows,
        endings: TaskEndings,
        catalog: DirectoryAgentLookup,
        commits: TaskCommits,
        metrics: MeshMetrics,
        config: DispatcherConfig,
        logger: Logger,
        sweeps: SweepLease,
        admission: Admission,
      ) =>
        new DelegationService(repo, new TaskTree(repo, turns), endings, catalog, {
          timeoutMs: config.DISPATCHER_DELEGATION_TIMEOUT_MS,
          reserveMs: config.DISPATCHER_DELEGATION_RESERVE_MS,
          treeBudget: config.DISPATCHER_TREE_RETRY_BUDGET,
          sweepMs: config.DISPATCHER_DELEGATION_SWEEP_MS,
          sweeps,
          resultsMaxBytes: config.DISPATCHER_DELEGATION_RESULTS_MAX_BYTES,
          openGraceMs: config.DISPATCHER_DELEGATION_OPEN_GRACE_MS,
          committed: (commit) => commits.committed(commit),
          admit: async (tenant, agent) => {
            const refusal = await admission.check(tenant, agent);
            if (!refusal) return undefined;
            metrics.admissionRefusals.inc({ tenant, agent: agent.id, reason: refusal.reason });
            return refusal.message;
          },
          metrics,
          logger,
        }),
      inject: [
        TaskRepository,
        TurnRows,
        TaskEndings,
        DirectoryAgentLookup,
        TaskCommits,
        MeshMetrics,
        DISPATCHER_CONFIG,
        LOGGER,
        SweepLease,
        Admission,
      ],
    },
  ],
  exports: [DelegationService],
})
export class DelegationModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(@Inject(DelegationService) private readonly delegation: DelegationService) {}

  onApplicationBootstrap(): void {
    this.delegation.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.delegation.stop();
  }
}
