import { Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { TopicDefinitions } from '@mesh/contract';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DATA_SOURCE, DISPATCHER_CONFIG } from '../core.module.js';
import { pushNotificationOf } from '../push/push.service.js';
import { TaskProjection } from './task-projection.js';
import { TaskService } from './task.service.js';

/** The task store: accepts and reads (TaskService), projected events (TaskProjection). */
@Module({
  providers: [
    {
      provide: TaskProjection,
      useFactory: (ds: DataSource, config: DispatcherConfig) =>
        new TaskProjection(ds, pushNotificationOf, undefined, config.DISPATCHER_STREAM_EVENTS_KEPT),
      inject: [DATA_SOURCE, DISPATCHER_CONFIG],
    },
    {
      provide: TaskService,
      useFactory: (ds: DataSource, topics: TopicDefinitions, projection: TaskProjection, config: DispatcherConfig) =>
        new TaskService(ds, topics.names, {
          created: (row, executionId) => projection.primeNew(row, executionId),
          startTimeoutMs: config.DISPATCHER_START_TIMEOUT_MS,
        }),
      inject: [DATA_SOURCE, TopicDefinitions, TaskProjection, DISPATCHER_CONFIG],
    },
  ],
  exports: [TaskProjection, TaskService],
})
export class TasksModule {}
