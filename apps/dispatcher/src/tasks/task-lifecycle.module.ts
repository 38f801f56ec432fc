import { Inject, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@mesh/telemetry';
import { CatalogModule } from '../catalog/catalog.module.js';
import { DirectoryAgentLookup } from '../catalog/agent-catalog.js';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { FleetModule } from '../fleet/fleet.module.js';
import { SweepLease } from '../fleet/sweep-lease.js';
import { TaskChangesModule } from './task-changes.module.js';
import { TaskCommits } from './task-commits.js';
import { TaskLifecycle } from './task-lifecycle.js';
import { TasksModule } from './tasks.module.js';
import { TaskEndings } from './task-endings.js';

/**
 * Deadlines and retention of stored tasks. Imports what a failed task wakes (TaskChangesModule:
 * relay, push, the task's watchers), so it starts after them and stops before them.
 */
@Module({
  imports: [TasksModule, CatalogModule, TaskChangesModule, FleetModule],
  providers: [
    {
      provide: TaskLifecycle,
      useFactory: (
        tasks: TaskEndings,
        catalog: DirectoryAgentLookup,
        commits: TaskCommits,
        config: DispatcherConfig,
        logger: Logger,
        sweeps: SweepLease,
      ) =>
        new TaskLifecycle(
          tasks,
          (agentId, tenant) => catalog.recordFor(agentId, tenant),
          {
            deadlineGraceMs: config.DISPATCHER_DEADLINE_GRACE_MS,
            retentionMs: config.DISPATCHER_TASK_RETENTION_MS,
            sweepMs: config.DISPATCHER_LIFECYCLE_SWEEP_MS,
            sweeps,
            logger,
          },
          // Stored with its cancel command and push deliveries already: wake their senders and its watchers here.
          ({ tenant, agentId, reason, ended }) =>
            commits.committed({
              commands: true,
              deliveries: true,
              changed: ended,
              outcomes: [{ tenant, agent: agentId, outcome: reason === 'NOT_STARTED' ? 'not_started' : 'expired' }],
            }),
        ),
      inject: [TaskEndings, DirectoryAgentLookup, TaskCommits, DISPATCHER_CONFIG, LOGGER, SweepLease],
    },
  ],
})
export class TaskLifecycleModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(@Inject(TaskLifecycle) private readonly lifecycle: TaskLifecycle) {}

  onApplicationBootstrap(): void {
    this.lifecycle.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.lifecycle.stop();
  }
}
