import { Controller, Get, Header, Inject, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { GrantKeys } from './grant-keys.js';
import { TokenExchange, TokenExchangeError } from './token-exchange.js';

/**
 * `GET /.well-known/jwks.json` (the keys grants and tool tokens verify with; no authentication) and
 * `POST /oauth/token` (RFC 8693 exchange of a grant; the grant is the credential).
 */
@Controller()
export class TokenExchangeController {
  constructor(
    @Inject(GrantKeys) private readonly keys: GrantKeys,
    @Inject(TokenExchange) private readonly exchange: TokenExchange,
  ) {}

  @Get('.well-known/jwks.json')
  // Short: a rotated-in key reaches the tool servers within minutes.
  @Header('Cache-Control', 'public, max-age=300')
  jwks(): { keys: unknown[] } {
    return this.keys.jwks();
  }

  @Post('oauth/token')
  async token(@Req() req: Request, @Res() res: Response): Promise<void> {
    // RFC 6749 §5.1: token responses are never cached.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    const form = typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : {};
    try {
      res.status(200).json(await this.exchange.exchange(form));
    } catch (err) {
      const e =
        err instanceof TokenExchangeError
          ? err
          : new TokenExchangeError('temporarily_unavailable', 'unavailable', 'the grant cannot be checked now; try again');
      res.status(e.status).json({ error: e.code, error_description: e.message });
    }
  }
}
