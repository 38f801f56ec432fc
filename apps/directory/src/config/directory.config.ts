import { z } from 'zod';
import { databaseSpec, flag, httpSpec, kafkaSpec, loadConfig, port, positiveInt, type ConfigOf } from '@mesh/config';
import { DEFAULT_COMMAND_PARTITIONS } from '@mesh/contract';
import { DEMO_API_KEYS, loadAuthOptions, type AuthenticatorOptions } from '@mesh/auth';

const jsonObject = (what: string) =>
  z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (!s) return undefined;
      try {
        const v: unknown = JSON.parse(s);
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
        return v as Record<string, unknown>;
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: `expected ${what}: ${(e as Error).message}` });
        return z.NEVER;
      }
    });

/** Everything the directory reads from the environment, validated at start. */
export const directoryConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  ...httpSpec,
  DIRECTORY_PORT: port(8081),
  /** Base URL of the dispatcher as callers reach it; served cards point at `<url>/a2a/{id}`. */
  DISPATCHER_PUBLIC_URL: z
    .string()
    .default('http://127.0.0.1:8080')
    .transform((s, ctx) => {
      const withScheme = /^https?:\/\//.test(s) ? s : `http://${s}`;
      try {
        const u = new URL(withScheme);
        return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
      } catch {
        ctx.addIssue({ code: 'custom', message: 'expected http(s)://host[:port][/path] or host:port' });
        return z.NEVER;
      }
    }),
  /** How long a heartbeat counts when the heartbeat itself names no TTL. */
  DIRECTORY_HEARTBEAT_TTL_MS: positiveInt(30_000),
  /** HTTP heartbeats per agent per minute, per replica (also the burst); more are 429 RATE_LIMITED. */
  DIRECTORY_HEARTBEATS_PER_MINUTE: positiveInt(120),
  /** Registrations (POST and PUT) per tenant per minute, per replica. */
  DIRECTORY_REGISTRATIONS_PER_MINUTE: positiveInt(60),
  DIRECTORY_DEFAULT_PARTITIONS: positiveInt(DEFAULT_COMMAND_PARTITIONS),
  DIRECTORY_MAX_PARTITIONS: positiveInt(64),
  /**
   * How often the cards topic is compared with the database (cluster id, end offsets, record count)
   * and republished when it is behind; every live agent's command topic is recreated if missing.
   */
  DIRECTORY_RECONCILE_INTERVAL_MS: positiveInt(10_000),
  /** Private JWK (JSON, with `kid`; alg ES256 or EdDSA) used to sign served cards. */
  DIRECTORY_SIGNING_JWK: jsonObject('a private JWK as JSON'),
  /** Keys trusted to sign submitted cards: `{"<tenant>|*": {"keys": [...]}}`. */
  DIRECTORY_TRUSTED_JWKS: jsonObject('{"<tenant>|*": JWKS}'),
  /** Tenants whose cards must carry a valid signature: comma list, or `*` for all. */
  DIRECTORY_REQUIRE_SIGNED_TENANTS: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  /**
   * Development mode: AUTH_API_KEYS defaults to the demo keys and, without DIRECTORY_SIGNING_JWK,
   * an ephemeral signing key is generated. Never set in production.
   */
  DEMO: flag(false),
};

/** Validated directory configuration, plus the authentication options. */
export type DirectoryConfig = ConfigOf<typeof directoryConfigSpec> & { auth: AuthenticatorOptions };

/** Loads and validates the directory's configuration (authentication included). */
export function loadDirectoryConfig(env: NodeJS.ProcessEnv = process.env): DirectoryConfig {
  const c = loadConfig(directoryConfigSpec, env);
  // Demo API keys only ever apply when development mode is asked for explicitly.
  const authEnv = c.DEMO && !env.AUTH_API_KEYS ? { ...env, AUTH_API_KEYS: DEMO_API_KEYS } : env;
  return { ...c, auth: loadAuthOptions(authEnv) };
}
