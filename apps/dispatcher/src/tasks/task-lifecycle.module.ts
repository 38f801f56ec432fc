import { Inject, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import { CatalogModule } from '../catalog/catalog.module.js';
import { DirectoryAgentLookup } from '../catalog/agent-catalog.js';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { EventsModule } from '../events/events.module.js';
import { TaskEventBusManager } from '../events/task-event-bus.manager.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { OutboxRelay } from '../outbox/outbox.relay.js';
import { PushModule } from '../push/push.module.js';
import { PushService } from '../push/push.service.js';
import { TaskLifecycle } from './task-lifecycle.js';
import { TasksModule } from './tasks.module.js';
import { TaskService } from './task.service.js';

/**
 * Deadlines and retention of stored tasks. Imports what a failed task wakes (relay, push, streams),
 * so it starts after them and stops before them.
 */
@Module({
  imports: [TasksModule, CatalogModule, OutboxModule, PushModule, EventsModule],
  providers: [
    {
      provide: TaskLifecycle,
      useFactory: (
        tasks: TaskService,
        catalog: DirectoryAgentLookup,
        relay: OutboxRelay,
        push: PushService,
        buses: TaskEventBusManager,
        metrics: MeshMetrics,
        config: DispatcherConfig,
        logger: Logger,
      ) =>
        new TaskLifecycle(
          tasks,
          (agentId, tenant) => catalog.recordFor(agentId, tenant),
          {
            deadlineGraceMs: config.DISPATCHER_DEADLINE_GRACE_MS,
            retentionMs: config.DISPATCHER_TASK_RETENTION_MS,
            sweepMs: config.DISPATCHER_LIFECYCLE_SWEEP_MS,
            logger,
          },
          ({ tenant, agentId, task, reason }) => {
            // Stored with its cancel command and push deliveries already: wake their senders.
            relay.kick();
            push.kick();
            metrics.tasks.inc({ tenant, agent: agentId, outcome: reason === 'NOT_STARTED' ? 'not_started' : 'expired' });
            buses.committedHere(task);
          },
        ),
      inject: [TaskService, DirectoryAgentLookup, OutboxRelay, PushService, TaskEventBusManager, MeshMetrics, DISPATCHER_CONFIG, LOGGER],
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
