import { Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DATA_SOURCE, DISPATCHER_CONFIG } from '../core.module.js';
import { CatalogModule } from '../catalog/catalog.module.js';
import { DirectoryAgentLookup } from '../catalog/agent-catalog.js';
import { pushEventIdOf } from '../push/push-config.js';
import { TaskProjection } from './task-projection.js';
import { TaskCommitSignal } from './task-commit-feed.js';
import { TaskAffinity } from './task-affinity.js';
import { TaskService } from './task.service.js';
import { CommandsModule } from '../outbox/commands.module.js';
import { OutboxCommands } from '../outbox/outbox-command.js';

/** The task store: accepts and reads (TaskService), projected events (TaskProjection). */
@Module({
  imports: [CatalogModule, CommandsModule],
  providers: [
    // One per process: what its projection notifies, and what its TaskCommitFeed skips as its own.
    { provide: TaskCommitSignal, useValue: new TaskCommitSignal() },
    // Which events partitions this process projects (told by the projector's consumer): new task ids land there.
    { provide: TaskAffinity, useValue: new TaskAffinity() },
    {
      provide: TaskProjection,
      useFactory: (ds: DataSource, config: DispatcherConfig, signal: TaskCommitSignal) =>
        new TaskProjection(ds, pushEventIdOf, undefined, config.DISPATCHER_STREAM_EVENTS_KEPT, signal),
      inject: [DATA_SOURCE, DISPATCHER_CONFIG, TaskCommitSignal],
    },
    {
      provide: TaskService,
      useFactory: (
        ds: DataSource,
        commands: OutboxCommands,
        projection: TaskProjection,
        config: DispatcherConfig,
        catalog: DirectoryAgentLookup,
        affinity: TaskAffinity,
      ) =>
        new TaskService(ds, commands, {
          created: (row, executionId) => projection.primeNew(row, executionId),
          newTaskId: () => affinity.newTaskId(),
          startTimeoutMs: config.DISPATCHER_START_TIMEOUT_MS,
          agentRecord: (agentId, tenant) => catalog.recordFor(agentId, tenant),
          maxTaskBytes: config.DISPATCHER_MAX_TASK_BYTES,
        }),
      inject: [DATA_SOURCE, OutboxCommands, TaskProjection, DISPATCHER_CONFIG, DirectoryAgentLookup, TaskAffinity],
    },
  ],
  exports: [TaskProjection, TaskService, TaskCommitSignal, TaskAffinity],
})
export class TasksModule {}
