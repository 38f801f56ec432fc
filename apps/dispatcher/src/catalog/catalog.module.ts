import { Module } from '@nestjs/common';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import type { Kafka } from '@mesh/bus';
import type { Logger } from '@mesh/telemetry';
import { KAFKA, LOGGER } from '../core.module.js';
import { DirectoryAgentLookup } from './agent-catalog.js';

/** The directory's live agent records (cards and heartbeats topics). */
@Module({
  providers: [
    {
      provide: DirectoryAgentLookup,
      useFactory: (kafka: Kafka, topics: TopicDefinitions, groups: ConsumerGroups, logger: Logger) =>
        new DirectoryAgentLookup(kafka, topics, groups, logger),
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, LOGGER],
    },
  ],
  exports: [DirectoryAgentLookup],
})
export class CatalogModule {}
