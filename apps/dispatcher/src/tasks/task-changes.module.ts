import { Module } from '@nestjs/common';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DATA_SOURCE, DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import type { DataSource } from 'typeorm';
import { OutboxModule } from '../outbox/outbox.module.js';
import { OutboxRelay } from '../outbox/outbox.relay.js';
import { PushModule } from '../push/push.module.js';
import { PushService } from '../push/push.service.js';
import { TaskCommits } from './task-commits.js';
import { TasksModule } from './tasks.module.js';
import { TaskReads } from './task-reads.js';
import { TaskEndings } from './task-endings.js';
import { TaskTransaction } from './task.repository.js';
import { TaskChangeNotifier } from './task-change-notifier.js';
import { TaskCommitFeed, TaskCommitSignal, TaskCommitTeller } from './task-commit-feed.js';

/**
 * How a committed task change reaches whoever waits on it: the replica's one TaskChangeNotifier
 * (streams and blocking sends), told of other replicas' projections by its TaskCommitFeed, and the
 * post-commit hook every committing path calls (TaskCommits).
 */
@Module({
  imports: [TasksModule, OutboxModule, PushModule],
  providers: [
    {
      provide: TaskChangeNotifier,
      useFactory: (tasks: TaskReads, config: DispatcherConfig, logger: Logger) =>
        new TaskChangeNotifier((taskId, tenant, agentId, after, limit) => tasks.readEvents(taskId, tenant, agentId, after, limit), {
          pollMs: config.DISPATCHER_STREAM_POLL_MS,
          eagerPollMs: config.DISPATCHER_WAIT_POLL_MS,
          logger,
        }),
      inject: [TaskReads, DISPATCHER_CONFIG, LOGGER],
    },
    {
      provide: TaskCommitFeed,
      useFactory: (signal: TaskCommitSignal, changes: TaskChangeNotifier, config: DispatcherConfig, logger: Logger) =>
        new TaskCommitFeed(signal, changes, { url: config.DATABASE_URL, logger }),
      inject: [TaskCommitSignal, TaskChangeNotifier, DISPATCHER_CONFIG, LOGGER],
    },
    {
      provide: TaskCommits,
      useFactory: (
        relay: OutboxRelay,
        push: PushService,
        changes: TaskChangeNotifier,
        ds: DataSource,
        signal: TaskCommitSignal,
        metrics: MeshMetrics,
        logger: Logger,
        endings: TaskEndings,
      ) => {
        const commits = new TaskCommits({ relay, push, changes, elsewhere: new TaskCommitTeller(ds, signal, logger), metrics });
        // A command the broker refuses for good ends its task in the relay's claim transaction.
        relay.handleUndeliverable({
          settle: async (q, commands) => {
            const { changed, outcomes } = await endings.failUndeliverable(new TaskTransaction(q), commands);
            return { done: () => commits.committed({ commands: true, deliveries: true, changed, outcomes }) };
          },
        });
        return commits;
      },
      inject: [OutboxRelay, PushService, TaskChangeNotifier, DATA_SOURCE, TaskCommitSignal, MeshMetrics, LOGGER, TaskEndings],
    },
  ],
  exports: [TaskChangeNotifier, TaskCommits],
})
export class TaskChangesModule {}
