import { Module } from '@nestjs/common';
import { KafkaBusTransport, type Kafka } from '@mesh/bus';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import { KAFKA, LOGGER } from '../core.module.js';
import { DelegationModule } from '../delegation/delegation.module.js';
import { DelegationService } from '../delegation/delegation.service.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TaskProjection } from '../tasks/task-projection.js';
import { TaskAffinity } from '../tasks/task-affinity.js';
import { TaskCommits } from '../tasks/task-commits.js';
import { TaskChangesModule } from '../tasks/task-changes.module.js';
import { EventProjector, projectorConsumerOptions } from './event-projector.js';
import { EventsTopic } from './events-topic.js';
import { TaskEventsController } from './task-events.controller.js';
import { TeamsModule } from '../teams/teams.module.js';
import { TeamBindings } from '../teams/team-bindings.js';
import { EventSignatures } from '../teams/event-signatures.js';
import { EventRefusals } from '../teams/event-refusals.js';

/** The projector's transport; connected to the app as a Nest microservice (see startDispatcher). */
export const PROJECTOR_TRANSPORT = Symbol('dispatcher.projector-transport');

/**
 * The agents' events (and the team events, once their signatures are believed): projected into the store (one consumer group over all replicas, through
 * {@link PROJECTOR_TRANSPORT}); the other replicas hear which tasks changed from the projection's
 * own statement (TaskCommitFeed), not from the topic.
 */
@Module({
  imports: [TasksModule, TaskChangesModule, DelegationModule, TeamsModule],
  controllers: [TaskEventsController],
  providers: [
    {
      provide: EventsTopic,
      useFactory: (kafka: Kafka, topics: TopicDefinitions, affinity: TaskAffinity) => new EventsTopic(kafka, topics, affinity),
      inject: [KAFKA, TopicDefinitions, TaskAffinity],
    },
    {
      provide: PROJECTOR_TRANSPORT,
      useFactory: (
        kafka: Kafka,
        topics: TopicDefinitions,
        groups: ConsumerGroups,
        affinity: TaskAffinity,
        logger: Logger,
        metrics: MeshMetrics,
      ) => {
        const events = topics.events().name;
        return new KafkaBusTransport(kafka, {
          ...projectorConsumerOptions(topics, groups, logger, metrics),
          // New tasks here get ids of the partitions projected here (TaskAffinity).
          onAssigned: (assignment) => affinity.assigned(assignment[events] ?? []),
        });
      },
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, TaskAffinity, LOGGER, MeshMetrics],
    },
    {
      provide: EventProjector,
      useFactory: (
        tasks: TaskProjection,
        commits: TaskCommits,
        delegation: DelegationService,
        topics: TopicDefinitions,
        bindings: TeamBindings,
        logger: Logger,
        metrics: MeshMetrics,
      ) =>
        new EventProjector({
          tasks,
          commits,
          delegation,
          logger,
          teamEvents: { topic: topics.names.teamEvents(), signatures: new EventSignatures(bindings) },
          refusals: new EventRefusals(metrics, logger),
        }),
      inject: [TaskProjection, TaskCommits, DelegationService, TopicDefinitions, TeamBindings, LOGGER, MeshMetrics],
    },
  ],
  exports: [PROJECTOR_TRANSPORT],
})
export class EventsModule {}
