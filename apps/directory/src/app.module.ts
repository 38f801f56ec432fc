import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { HealthModule, type HealthProbe } from '@mesh/service';
import { AuthModule } from './auth/auth.module.js';
import { CardStreamModule } from './card-stream/card-stream.module.js';
import type { CardOutbox } from './card-stream/card-outbox.js';
import type { CardStream } from './card-stream/card-stream.port.js';
import type { Logger } from '@mesh/telemetry';
import { DATA_SOURCE, DIRECTORY_CONFIG, LOGGER } from './common/tokens.js';
import type { DirectoryConfig } from './config/directory.config.js';
import { LivenessModule } from './liveness/liveness.module.js';
import { RegistryModule } from './registry/registry.module.js';
import { REGISTRATION_LIMITER, type RateLimiter } from './registry/registration-limiter.token.js';
import { SearchModule } from './search/search.module.js';
import type { CardSigner } from './signatures/card-signer.js';
import type { CardVerifier } from './signatures/card-verifier.js';
import { SignaturesModule } from './signatures/signatures.module.js';

/** Everything built before Nest starts (connections, keys), handed to the modules. */
export interface DirectoryDeps {
  config: DirectoryConfig;
  dataSource: DataSource;
  probes: HealthProbe[];
  stream: CardStream;
  outbox: CardOutbox;
  verifier: CardVerifier;
  signer?: CardSigner;
  limiter: RateLimiter;
  /** The process's logger. */
  logger: Logger;
}

@Global()
@Module({})
class CoreModule {
  static forDeps(deps: DirectoryDeps): DynamicModule {
    const providers = [
      { provide: DIRECTORY_CONFIG, useValue: deps.config },
      { provide: DATA_SOURCE, useValue: deps.dataSource },
      { provide: REGISTRATION_LIMITER, useValue: deps.limiter },
      { provide: LOGGER, useValue: deps.logger },
    ];
    return { module: CoreModule, providers, exports: providers.map((p) => p.provide) };
  }
}

/** Root module of the directory. */
@Module({})
export class AppModule {
  static forRoot(deps: DirectoryDeps): DynamicModule {
    return {
      module: AppModule,
      imports: [
        HealthModule.forProbes(deps.probes),
        CoreModule.forDeps(deps),
        AuthModule.forOptions(deps.config.auth),
        SignaturesModule.forKeys(deps.verifier, deps.signer),
        CardStreamModule.forStream(deps.stream, deps.outbox),
        RegistryModule,
        SearchModule,
        LivenessModule,
      ],
    };
  }
}
