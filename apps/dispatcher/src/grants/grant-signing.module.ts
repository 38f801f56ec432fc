import { Module } from '@nestjs/common';
import { MeshMetrics, type Logger } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { DISPATCHER_CONFIG, LOGGER } from '../core.module.js';
import { GrantKeys } from './grant-keys.js';
import { grantIssuer, GrantSigner } from './grant-signer.js';

/** The signing keys and the grant signer: for everything that builds a run command. */
@Module({
  providers: [
    {
      provide: GrantKeys,
      useFactory: (config: DispatcherConfig, logger: Logger) => GrantKeys.load(config, logger),
      inject: [DISPATCHER_CONFIG, LOGGER],
    },
    {
      provide: GrantSigner,
      useFactory: (keys: GrantKeys, config: DispatcherConfig, metrics: MeshMetrics) =>
        new GrantSigner(keys, grantIssuer(config), config.DISPATCHER_GRANT_TTL_MS, metrics),
      inject: [GrantKeys, DISPATCHER_CONFIG, MeshMetrics],
    },
  ],
  exports: [GrantKeys, GrantSigner],
})
export class GrantSigningModule {}
