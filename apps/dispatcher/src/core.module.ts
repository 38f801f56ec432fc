import { Global, Inject, Module, type DynamicModule, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { assertKafkaReachable, type Kafka, type KafkaProbe } from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { ConsumerGroups, TopicDefinitions } from '@mesh/contract';
import { initializeServiceDatabase } from '@mesh/database';
import type { Authenticator } from '@mesh/auth';
import type { Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from './config/dispatcher.config.js';
import { DISPATCHER_SCHEMA } from './database/migrations/index.js';
import type { CommandProducer } from './outbox/command-producer.js';
import type { ToolAudiencePolicy } from './grants/tool-audience.policy.js';

/** Injection tokens of what every module of the dispatcher shares. */
export const DISPATCHER_CONFIG = Symbol('dispatcher.config');
export const LOGGER = Symbol('dispatcher.logger');
export const KAFKA = Symbol('dispatcher.kafka');
export const DATA_SOURCE = Symbol('dispatcher.data-source');
export const AUTHENTICATOR = Symbol('dispatcher.authenticator');
export const DISPATCHER_DEPS = Symbol('dispatcher.deps');

/**
 * What is built before Nest starts: validated settings and unconnected clients (the health probes
 * are built over them). They connect in {@link CoreModule.onModuleInit}.
 */
export interface DispatcherDeps {
  config: DispatcherConfig;
  logger: Logger;
  kafka: Kafka;
  /** How the Kafka check before everything else reaches the brokers. */
  kafkaConnection: Parameters<typeof assertKafkaReachable>[0];
  kafkaProbe: KafkaProbe;
  /** The schema's data source, not initialised yet. */
  dataSource: DataSource;
  authenticator: Authenticator;
  /** Wraps the relay's command producer (tests make Kafka unavailable to the relay with it). */
  wrapProducer?: (producer: CommandProducer) => CommandProducer;
  /** Which tool servers each agent may get tokens for (default: any). */
  toolAudiencePolicy?: ToolAudiencePolicy;
}

/**
 * Settings and connections of the dispatcher. Global, so its hooks run first at start (Kafka
 * check, then the database created and migrated, before any module's bootstrap) and last at
 * shutdown (after every module drained).
 */
@Global()
@Module({})
export class CoreModule implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(DISPATCHER_DEPS) private readonly deps: DispatcherDeps) {}

  static forDeps(deps: DispatcherDeps): DynamicModule {
    const providers = [
      { provide: DISPATCHER_DEPS, useValue: deps },
      { provide: DISPATCHER_CONFIG, useValue: deps.config },
      { provide: LOGGER, useValue: deps.logger },
      { provide: KAFKA, useValue: deps.kafka },
      { provide: DATA_SOURCE, useValue: deps.dataSource },
      { provide: AUTHENTICATOR, useValue: deps.authenticator },
      { provide: TopicDefinitions, useValue: topicDefinitions(deps.config) },
      { provide: ConsumerGroups, useValue: new ConsumerGroups(deps.config.TOPIC_PREFIX) },
    ];
    return { module: CoreModule, providers, exports: providers.map((p) => p.provide) };
  }

  async onModuleInit(): Promise<void> {
    await assertKafkaReachable(this.deps.kafkaConnection);
    await initializeServiceDatabase(this.deps.dataSource, { url: this.deps.config.DATABASE_URL, schema: DISPATCHER_SCHEMA });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.deps.kafkaProbe.close();
    if (this.deps.dataSource.isInitialized) await this.deps.dataSource.destroy();
  }
}
