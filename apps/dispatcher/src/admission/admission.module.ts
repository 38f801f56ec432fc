import { Module } from '@nestjs/common';
import { BusAdmin, type Kafka } from '@mesh/bus';
import { MeshMetrics } from '@mesh/telemetry';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import { CatalogModule } from '../catalog/catalog.module.js';
import { DirectoryAgentLookup } from '../catalog/agent-catalog.js';
import { parseByteSize } from '@mesh/service';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, KAFKA } from '../core.module.js';
import { Admission } from './admission.js';
import { BacklogGauges } from './backlog-gauges.js';
import { KafkaWorkerSignals } from './worker-signals.js';

/** Admission control of new work: tenant rate, worker health and backlog. */
@Module({
  imports: [CatalogModule],
  providers: [
    {
      provide: KafkaWorkerSignals,
      useFactory: (
        kafka: Kafka,
        topics: TopicDefinitions,
        groups: ConsumerGroups,
        catalog: DirectoryAgentLookup,
        config: DispatcherConfig,
      ) =>
        new KafkaWorkerSignals(kafka, {
          groupOf: (agentId) => groups.agentWorkers(agentId),
          topicOf: (agentId) => topics.names.commands(agentId),
          healthy: (agentId) => catalog.healthy(agentId),
          countMembers: config.DISPATCHER_REQUIRE_HEALTHY_WORKER,
          ttlMs: config.DISPATCHER_BACKLOG_CHECK_MS,
          waitMs: config.DISPATCHER_BACKLOG_WAIT_MS,
        }),
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, DirectoryAgentLookup, DISPATCHER_CONFIG],
    },
    {
      provide: BacklogGauges,
      useFactory: (
        kafka: Kafka,
        topics: TopicDefinitions,
        groups: ConsumerGroups,
        catalog: DirectoryAgentLookup,
        metrics: MeshMetrics,
        config: DispatcherConfig,
      ) =>
        new BacklogGauges(new BusAdmin(kafka), metrics, {
          agents: () => catalog.activeIds(),
          maxAgents: config.METRICS_MAX_TENANT_AGENT_PAIRS,
          groupOf: (agentId) => groups.agentWorkers(agentId),
          topicOf: (agentId) => topics.names.commands(agentId),
          deadLettersOf: (topic) => topics.names.deadLetters(topic),
          intervalMs: config.DISPATCHER_METRICS_INTERVAL_MS,
        }),
      inject: [KAFKA, TopicDefinitions, ConsumerGroups, DirectoryAgentLookup, MeshMetrics, DISPATCHER_CONFIG],
    },
    {
      provide: Admission,
      useFactory: (signals: KafkaWorkerSignals, config: DispatcherConfig) =>
        new Admission(signals, {
          ratePerSecond: config.DISPATCHER_TENANT_RATE_PER_S,
          burst: config.DISPATCHER_TENANT_BURST,
          bytesPerSecond: config.DISPATCHER_TENANT_BYTES_PER_S,
          bytesBurst: config.DISPATCHER_TENANT_BYTES_BURST,
          maxBodyBytes: parseByteSize(config.DISPATCHER_BODY_LIMIT),
          requireHealthyWorker: config.DISPATCHER_REQUIRE_HEALTHY_WORKER,
          maxBacklog: config.DISPATCHER_MAX_AGENT_BACKLOG,
          retryAfterSeconds: config.DISPATCHER_RETRY_AFTER_S,
        }),
      inject: [KafkaWorkerSignals, DISPATCHER_CONFIG],
    },
  ],
  exports: [Admission],
})
export class AdmissionModule {}
