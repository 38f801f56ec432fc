import { Controller, Get, Header, Inject, Optional } from '@nestjs/common';
import { CardSigner } from './card-signer.js';

/** `GET /.well-known/jwks.json`: the public key(s) served cards are signed with (unauthenticated). */
@Controller('.well-known')
export class JwksController {
  constructor(@Optional() @Inject(CardSigner) private readonly signer?: CardSigner) {}

  @Get('jwks.json')
  @Header('Cache-Control', 'public, max-age=300')
  jwks(): { keys: unknown[] } {
    return this.signer ? this.signer.jwks() : { keys: [] };
  }
}
