import { createParamDecorator, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { AuthError, Authenticator, type Principal } from '@mesh/auth';

type AuthedRequest = Request & { principal?: Principal };

/** Authenticates `Authorization: Bearer …` (JWT or dev API key) and attaches the principal. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(@Inject(Authenticator) private readonly authenticator: Authenticator) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    // Node keeps the first of repeated Authorization headers, a proxy may use the last: two
    // credentials in one request name no caller at all.
    if (req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization').length > 1) {
      throw new AuthError('Authorization header sent more than once');
    }
    // Throws AuthError (code UNAUTHENTICATED); the problem filter answers 401.
    req.principal = await this.authenticator.authenticate(req.headers.authorization);
    return true;
  }
}

/** The authenticated caller of the current request (set by AuthGuard). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const p = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!p) throw new Error('AuthGuard did not run on this route');
  return p;
});
