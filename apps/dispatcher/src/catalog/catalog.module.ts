import { Module } from '@nestjs/common';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import type { Kafka } from '@mesh/bus';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import { KAFKA, LOGGER } from '../core.module.js';
import { DirectoryAgentLookup } from './agent-catalog.js';

/** The directory's live agent records (cards and heartbeats topics). */
@Module({
  providers: [
    {
      provide: DirectoryAgentLookup,
      useFactory: (kafka: Kafka, topics: TopicDefinitions, groups: ConsumerGroups, logger: Logger, metrics: MeshMetrics) => {
        const catalog = new DirectoryAgentLookup(kafka, topics, groups, logger);
        // `/metrics` needs no token: only what an anonymous caller may see is named there.
        metrics.namePublicAgents((agentId) => catalog.isPublic(agentId));
        return catalog;
      },
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, LOGGER, MeshMetrics],
    },
  ],
  exports: [DirectoryAgentLookup],
})
export class CatalogModule {}
