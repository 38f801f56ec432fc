import { Module } from '@nestjs/common';
import { KafkaBusTransport, type Kafka } from '@mesh/bus';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, KAFKA, LOGGER } from '../core.module.js';
import { PushModule } from '../push/push.module.js';
import { DelegationModule } from '../delegation/delegation.module.js';
import { DelegationService } from '../delegation/delegation.service.js';
import { PushService } from '../push/push.service.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TaskProjection } from '../tasks/task-projection.js';
import { TaskService } from '../tasks/task.service.js';
import { EventFanout } from './event-fanout.js';
import { EventProjector, projectorConsumerOptions } from './event-projector.js';
import { EventsTopic } from './events-topic.js';
import { StoredTaskWatch } from './stored-task-watch.js';
import { TaskEventBusManager } from './task-event-bus.manager.js';
import { TaskEventsController } from './task-events.controller.js';

/** The projector's transport; connected to the app as a Nest microservice (see startDispatcher). */
export const PROJECTOR_TRANSPORT = Symbol('dispatcher.projector-transport');

/**
 * The agents' events: projected into the store (one consumer group over all replicas, through
 * {@link PROJECTOR_TRANSPORT}) and handed to this replica's streams and blocking sends.
 */
@Module({
  imports: [TasksModule, PushModule, DelegationModule],
  controllers: [TaskEventsController],
  providers: [
    { provide: TaskEventBusManager, useFactory: () => new TaskEventBusManager() },
    {
      provide: EventsTopic,
      useFactory: (kafka: Kafka, topics: TopicDefinitions) => new EventsTopic(kafka, topics),
      inject: [KAFKA, TopicDefinitions],
    },
    {
      provide: PROJECTOR_TRANSPORT,
      useFactory: (kafka: Kafka, topics: TopicDefinitions, groups: ConsumerGroups, logger: Logger, metrics: MeshMetrics) =>
        new KafkaBusTransport(kafka, projectorConsumerOptions(topics, groups, logger, metrics)),
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, LOGGER, MeshMetrics],
    },
    {
      provide: EventProjector,
      useFactory: (
        tasks: TaskProjection,
        buses: TaskEventBusManager,
        push: PushService,
        delegation: DelegationService,
        metrics: MeshMetrics,
        logger: Logger,
      ) => new EventProjector({ tasks, buses, push, delegation, metrics, logger }),
      inject: [TaskProjection, TaskEventBusManager, PushService, DelegationService, MeshMetrics, LOGGER],
    },
    {
      // Every replica reads the whole topic under a group of its own and commits nothing that the
      // projector relies on: a plain kafkajs consumer that seeks, pauses and resumes, which the
      // keyed transport (shared group, committed offsets) is not meant for.
      provide: EventFanout,
      useFactory: (
        kafka: Kafka,
        topics: TopicDefinitions,
        groups: ConsumerGroups,
        buses: TaskEventBusManager,
        config: DispatcherConfig,
        logger: Logger,
        _created: EventsTopic,
      ) => {
        const fanout = new EventFanout(kafka, buses, {
          topic: topics.names.events(),
          groupName: (replicaId) => groups.dispatcherFanout(replicaId),
          projectorGroup: groups.dispatcherProjector(),
          idleMs: config.DISPATCHER_FANOUT_IDLE_MS,
          logger,
        });
        buses.feedFrom(fanout);
        return fanout;
      },
      // After EventsTopic: it subscribes to the topic.
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, TaskEventBusManager, DISPATCHER_CONFIG, LOGGER, EventsTopic],
    },
    {
      provide: StoredTaskWatch,
      useFactory: (tasks: TaskService, buses: TaskEventBusManager, config: DispatcherConfig, logger: Logger) =>
        new StoredTaskWatch((taskId, tenant, agentId) => tasks.load(taskId, tenant, agentId), buses, {
          pollMs: config.DISPATCHER_STREAM_POLL_MS,
          hurriedPollMs: config.DISPATCHER_WAIT_POLL_MS,
          logger,
        }),
      inject: [TaskService, TaskEventBusManager, DISPATCHER_CONFIG, LOGGER],
    },
  ],
  exports: [TaskEventBusManager, StoredTaskWatch, PROJECTOR_TRANSPORT],
})
export class EventsModule {}
