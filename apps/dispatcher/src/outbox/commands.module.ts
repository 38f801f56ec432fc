import { Inject, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { BusAdmin, type Kafka } from '@mesh/bus';
import { TopicDefinitions } from '@mesh/contract';
import type { Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, KAFKA, LOGGER } from '../core.module.js';
import { CommandLimits } from './command-limits.js';
import { OutboxCommands } from './outbox-command.js';

const LIMITS_ADMIN = Symbol('dispatcher.command-limits-admin');

/** How commands are built and how large their topics let them be: for everything that writes one. */
@Module({
  providers: [
    { provide: LIMITS_ADMIN, useFactory: (kafka: Kafka) => new BusAdmin(kafka), inject: [KAFKA] },
    {
      provide: CommandLimits,
      useFactory: (admin: BusAdmin, config: DispatcherConfig, logger: Logger) =>
        new CommandLimits(admin, { refreshMs: config.OUTBOX_LIMITS_REFRESH_MS, logger }),
      inject: [LIMITS_ADMIN, DISPATCHER_CONFIG, LOGGER],
    },
    {
      provide: OutboxCommands,
      useFactory: (topics: TopicDefinitions, limits: CommandLimits) => new OutboxCommands(topics.names, (topic) => limits.limitOf(topic)),
      inject: [TopicDefinitions, CommandLimits],
    },
  ],
  exports: [CommandLimits, OutboxCommands],
})
export class CommandsModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly limits: CommandLimits,
    @Inject(LIMITS_ADMIN) private readonly admin: BusAdmin,
  ) {}

  onApplicationBootstrap(): void {
    this.limits.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.limits.stop();
    await this.admin.close();
  }
}
