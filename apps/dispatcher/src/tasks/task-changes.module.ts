import { Module } from '@nestjs/common';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { OutboxRelay } from '../outbox/outbox.relay.js';
import { PushModule } from '../push/push.module.js';
import { PushService } from '../push/push.service.js';
import { TaskCommits } from './task-commits.js';
import { TasksModule } from './tasks.module.js';
import { TaskService } from './task.service.js';
import { TaskChangeNotifier } from './task-change-notifier.js';

/**
 * How a committed task change reaches whoever waits on it: the replica's one TaskChangeNotifier
 * (streams and blocking sends) and the post-commit hook every committing path calls (TaskCommits).
 */
@Module({
  imports: [TasksModule, OutboxModule, PushModule],
  providers: [
    {
      provide: TaskChangeNotifier,
      useFactory: (tasks: TaskService, config: DispatcherConfig, logger: Logger) =>
        new TaskChangeNotifier((taskId, tenant, agentId, after, limit) => tasks.readEvents(taskId, tenant, agentId, after, limit), {
          pollMs: config.DISPATCHER_STREAM_POLL_MS,
          hurriedPollMs: config.DISPATCHER_WAIT_POLL_MS,
          hurryMs: config.DISPATCHER_STREAM_POLL_MS * 5,
          logger,
        }),
      inject: [TaskService, DISPATCHER_CONFIG, LOGGER],
    },
    {
      provide: TaskCommits,
      useFactory: (relay: OutboxRelay, push: PushService, changes: TaskChangeNotifier, metrics: MeshMetrics) =>
        new TaskCommits({ relay, push, changes, metrics }),
      inject: [OutboxRelay, PushService, TaskChangeNotifier, MeshMetrics],
    },
  ],
  exports: [TaskChangeNotifier, TaskCommits],
})
export class TaskChangesModule {}
