export type { RateLimiter } from './rate-limiter.js';

/** Injection token of the per-tenant registration RateLimiter. */
export const REGISTRATION_LIMITER = Symbol('REGISTRATION_LIMITER');
