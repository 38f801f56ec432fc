import type { NextFunction, Request, Response } from 'express';

/**
 * Every answer of the directory's API depends on the caller (its tenant's private agents, cards
 * and versions): no shared cache may keep one, and none may serve it for another credential.
 */
export function privateAnswers(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'private, no-cache');
  res.append('Vary', 'Authorization');
  next();
}
