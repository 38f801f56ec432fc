import { createParamDecorator, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { AuthError, Authenticator, type Principal } from '@mesh/auth';

type AuthedRequest = Request & { principal?: Principal };

/**
 * The caller of a request, from its `Authorization: Bearer …` header (JWT or dev API key); throws
 * AuthError (code UNAUTHENTICATED, answered 401) when there is none.
 */
export async function authenticateRequest(authenticator: Authenticator, req: Request): Promise<Principal> {
  // Node keeps the first of repeated Authorization headers, a proxy may use the last: two
  // credentials in one request name no caller at all.
  if (req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization').length > 1) {
    throw new AuthError('Authorization header sent more than once');
  }
  return authenticator.authenticate(req.headers.authorization);
}

/**
 * Authenticates a request that carries a body before the body is read (the service's
 * `authenticateBodies` hook) and keeps its principal for the guard.
 */
export async function authenticateBody(authenticator: Authenticator, req: AuthedRequest): Promise<void> {
  req.principal = await authenticateRequest(authenticator, req);
}

/** Authenticates `Authorization: Bearer …` (JWT or dev API key) and attaches the principal. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(@Inject(Authenticator) private readonly authenticator: Authenticator) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    // A request with a body was authenticated from the same headers before its body was read.
    // Throws AuthError (code UNAUTHENTICATED); the problem filter answers 401.
    req.principal ??= await authenticateRequest(this.authenticator, req);
    return true;
  }
}

/** The authenticated caller of the current request (set by AuthGuard). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const p = ctx.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!p) throw new Error('AuthGuard did not run on this route');
  return p;
});
