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
import { TaskRepository } from './task.repository.js';
import { TaskAcceptance } from './task-acceptance.js';
import { TaskEndings } from './task-endings.js';
import { TaskReads } from './task-reads.js';
import { TurnRows } from './turn-rows.js';
import { CommandsModule } from '../outbox/commands.module.js';
import { OutboxCommands } from '../outbox/outbox-command.js';
import { GrantSigningModule } from '../grants/grant-signing.module.js';
import { GrantSigner } from '../grants/grant-signer.js';

/**
 * The task store, by role over one repository: accepting messages, the ends the dispatcher
 * decides, reads, and projected events (TaskProjection).
 */
@Module({
  imports: [CatalogModule, CommandsModule, GrantSigningModule],
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
    // One per process: the first turns of concurrent accepts share its statements.
    { provide: TaskRepository, useFactory: (ds: DataSource) => new TaskRepository(ds), inject: [DATA_SOURCE] },
    {
      provide: TurnRows,
      useFactory: (commands: OutboxCommands, config: DispatcherConfig, grants: GrantSigner) =>
        new TurnRows(commands, config.DISPATCHER_START_TIMEOUT_MS, grants),
      inject: [OutboxCommands, DISPATCHER_CONFIG, GrantSigner],
    },
    {
      provide: TaskAcceptance,
      useFactory: (repo: TaskRepository, turns: TurnRows, projection: TaskProjection, config: DispatcherConfig, affinity: TaskAffinity) =>
        new TaskAcceptance(repo, turns, {
          created: (row, executionId) => projection.primeNew(row, executionId),
          newTaskId: () => affinity.newTaskId(),
          maxTaskBytes: config.DISPATCHER_MAX_TASK_BYTES,
        }),
      inject: [TaskRepository, TurnRows, TaskProjection, DISPATCHER_CONFIG, TaskAffinity],
    },
    {
      provide: TaskEndings,
      useFactory: (repo: TaskRepository, commands: OutboxCommands, catalog: DirectoryAgentLookup) =>
        new TaskEndings(repo, commands, (agentId, tenant) => catalog.recordFor(agentId, tenant)),
      inject: [TaskRepository, OutboxCommands, DirectoryAgentLookup],
    },
    { provide: TaskReads, useFactory: (repo: TaskRepository) => new TaskReads(repo), inject: [TaskRepository] },
  ],
  exports: [TaskProjection, TaskRepository, TurnRows, TaskAcceptance, TaskEndings, TaskReads, TaskCommitSignal, TaskAffinity],
})
export class TasksModule {}
