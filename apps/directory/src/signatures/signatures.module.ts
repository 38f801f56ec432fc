import { Global, Module, type DynamicModule } from '@nestjs/common';
import { CardSigner } from './card-signer.js';
import { CardVerifier } from './card-verifier.js';
import { JwksController } from './jwks.controller.js';

/** Card signature verification (submitted cards) and signing (served cards) with the JWKS route. */
@Global()
@Module({})
export class SignaturesModule {
  static forKeys(verifier: CardVerifier, signer: CardSigner | undefined): DynamicModule {
    const providers = [{ provide: CardVerifier, useValue: verifier }, ...(signer ? [{ provide: CardSigner, useValue: signer }] : [])];
    return { module: SignaturesModule, controllers: [JwksController], providers, exports: providers.map((p) => p.provide) };
  }
}
