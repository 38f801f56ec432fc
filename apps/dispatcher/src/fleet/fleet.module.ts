import { Module } from '@nestjs/common';
import type { Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { SweepLease } from './sweep-lease.js';

/**
 * What the replicas of one dispatcher fleet settle between them: which one runs the catch-up
 * sweeps. Imported by every module with a sweep, so the first attempt at the lease is made before
 * their loops start.
 */
@Module({
  providers: [
    {
      provide: SweepLease,
      useFactory: (config: DispatcherConfig, logger: Logger) =>
        new SweepLease({ url: config.DATABASE_URL, retryMs: config.DISPATCHER_SWEEP_LEASE_RETRY_MS, logger }),
      inject: [DISPATCHER_CONFIG, LOGGER],
    },
  ],
  exports: [SweepLease],
})
export class FleetModule {}
