import { Module } from '@nestjs/common';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import type { Kafka } from '@mesh/bus';
import { KAFKA } from '../core.module.js';
import { DirectoryAgentLookup } from './agent-catalog.js';

/** The directory's live agent records (cards and heartbeats topics). */
@Module({
  providers: [
    {
      provide: DirectoryAgentLookup,
      useFactory: (kafka: Kafka, topics: TopicDefinitions, groups: ConsumerGroups) => new DirectoryAgentLookup(kafka, topics, groups),
      inject: [KAFKA, TopicDefinitions, ConsumerGroups],
    },
  ],
  exports: [DirectoryAgentLookup],
})
export class CatalogModule {}
