import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { Kafka } from '@mesh/bus';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DATA_SOURCE, DISPATCHER_CONFIG, DISPATCHER_DEPS, KAFKA, LOGGER, type DispatcherDeps } from '../core.module.js';
import { FleetModule } from '../fleet/fleet.module.js';
import { SweepLease } from '../fleet/sweep-lease.js';
import { BusCommandProducer, type CommandProducer } from './command-producer.js';
import { OutboxRelay } from './outbox.relay.js';
import { CommandLimits } from './command-limits.js';
import { CommandsModule } from './commands.module.js';

const COMMAND_PRODUCER = Symbol('dispatcher.command-producer');

/** Commands committed with their tasks, moved to the agents' command topics. */
@Module({
  imports: [FleetModule, CommandsModule],
  providers: [
    {
      provide: COMMAND_PRODUCER,
      useFactory: (kafka: Kafka, limits: CommandLimits, deps: DispatcherDeps): CommandProducer => {
        const producer = new BusCommandProducer(
          kafka,
          (topic) => limits.limitOf(topic),
          (topic) => limits.reread(topic),
        );
        return deps.wrapProducer ? deps.wrapProducer(producer) : producer;
      },
      inject: [KAFKA, CommandLimits, DISPATCHER_DEPS],
    },
    {
      provide: OutboxRelay,
      useFactory: (
        ds: DataSource,
        producer: CommandProducer,
        config: DispatcherConfig,
        logger: Logger,
        sweeps: SweepLease,
        metrics: MeshMetrics,
      ) =>
        new OutboxRelay(ds, producer, {
          batchSize: config.OUTBOX_BATCH_SIZE,
          idleMs: config.OUTBOX_IDLE_MS,
          sweeps,
          lingerMs: config.OUTBOX_LINGER_MS,
          maxBackoffMs: 5000,
          logger,
          counted: (kind, n) => metrics.undeliverableCommands.inc({ kind }, n),
        }),
      inject: [DATA_SOURCE, COMMAND_PRODUCER, DISPATCHER_CONFIG, LOGGER, SweepLease, MeshMetrics],
    },
  ],
  exports: [OutboxRelay],
})
export class OutboxModule implements OnApplicationShutdown {
  constructor(@Inject(COMMAND_PRODUCER) private readonly producer: CommandProducer) {}

  /** Runs after the relay (a provider of this module) stopped: nothing sends any more. */
  onApplicationShutdown(): Promise<void> {
    return this.producer.close();
  }
}
