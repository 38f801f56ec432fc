import { z } from 'zod';
import { loadConfig } from '@mesh/config';
import type { AuthenticatorOptions, ApiKeyGrant } from './authenticator.js';

/**
 * Env variables of authentication:
 * - AUTH_API_KEYS: `key=tenant:subject[,key=tenant:subject…]` (development only)
 * - AUTH_JWT_ISSUER, AUTH_JWT_AUDIENCE, and AUTH_JWKS_URL or AUTH_JWKS_JSON
 */
export const authSpec = {
  AUTH_API_KEYS: z
    .string()
    .optional()
    .transform((s, ctx) => {
      const grants: ApiKeyGrant[] = [];
      for (const entry of (s ?? '')
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean)) {
        const m = /^([^=\s]{8,})=([a-z0-9][a-z0-9-]{0,62}):([^:\s]+)$/.exec(entry);
        if (!m) {
          ctx.addIssue({ code: 'custom', message: `expected key=tenant:subject (key at least 8 characters), got "${entry.slice(0, 40)}"` });
          return z.NEVER;
        }
        grants.push({ key: m[1], tenant: m[2], subject: m[3], actor: `apikey:${m[1].slice(0, 4)}…` });
      }
      return grants;
    }),
  AUTH_JWT_ISSUER: z.string().min(1).optional(),
  AUTH_JWT_AUDIENCE: z.string().min(1).optional(),
  AUTH_JWKS_URL: z.string().url().optional(),
  AUTH_JWKS_JSON: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (!s) return undefined;
      try {
        const v = JSON.parse(s) as { keys?: unknown };
        if (!Array.isArray(v.keys)) throw new Error('no keys array');
        return v as { keys: [] };
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: `not a JWKS: ${(e as Error).message}` });
        return z.NEVER;
      }
    }),
};

/** Authenticator options from the environment. */
export function loadAuthOptions(env: NodeJS.ProcessEnv = process.env): AuthenticatorOptions {
  const c = loadConfig(authSpec, env);
  const jwtConfigured = c.AUTH_JWT_ISSUER && c.AUTH_JWT_AUDIENCE && (c.AUTH_JWKS_URL || c.AUTH_JWKS_JSON);
  return {
    apiKeys: c.AUTH_API_KEYS,
    jwt: jwtConfigured
      ? { issuer: c.AUTH_JWT_ISSUER!, audience: c.AUTH_JWT_AUDIENCE!, jwks: c.AUTH_JWKS_JSON, jwksUrl: c.AUTH_JWKS_URL }
      : undefined,
  };
}

/** The development keys `npm start` ships (README lists them). */
export const DEMO_API_KEYS = 'demo-acme=acme:alice,demo-globex=globex:bob';
