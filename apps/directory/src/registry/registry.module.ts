import { Module } from '@nestjs/common';
import { DIRECTORY_CONFIG } from '../common/tokens.js';
import type { DirectoryConfig } from '../config/directory.config.js';
import { CardSigner } from '../signatures/card-signer.js';
import { RegistryController } from './registry.controller.js';
import { RegistryService } from './registry.service.js';
import { ServedCards } from './served-card.js';

/** Agent registration, versions, retirement and the served card. */
@Module({
  controllers: [RegistryController],
  providers: [
    RegistryService,
    {
      provide: ServedCards,
      inject: [DIRECTORY_CONFIG, { token: CardSigner, optional: true }],
      useFactory: (config: DirectoryConfig, signer?: CardSigner) => new ServedCards(config.DISPATCHER_PUBLIC_URL, signer),
    },
  ],
  exports: [RegistryService],
})
export class RegistryModule {}
