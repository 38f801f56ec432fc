import { Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DATA_SOURCE, DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { FleetModule } from '../fleet/fleet.module.js';
import { SweepLease } from '../fleet/sweep-lease.js';
import { PushService } from './push.service.js';

/** Push notification configs and their deliveries. */
@Module({
  imports: [FleetModule],
  providers: [
    {
      provide: PushService,
      useFactory: (ds: DataSource, config: DispatcherConfig, logger: Logger, metrics: MeshMetrics, sweeps: SweepLease) =>
        new PushService(
          ds,
          {
            allowCidrs: config.PUSH_EGRESS_ALLOW_CIDRS,
            maxAttempts: config.PUSH_MAX_ATTEMPTS,
            backoffBaseMs: config.PUSH_BACKOFF_BASE_MS,
            backoffMaxMs: config.PUSH_BACKOFF_MAX_MS,
            timeoutMs: config.PUSH_TIMEOUT_MS,
            pollMs: config.PUSH_POLL_MS,
            sweeps,
            logger,
          },
          metrics,
        ),
      inject: [DATA_SOURCE, DISPATCHER_CONFIG, LOGGER, MeshMetrics, SweepLease],
    },
  ],
  exports: [PushService],
})
export class PushModule {}
