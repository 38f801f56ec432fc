import { z } from 'zod';
import { MeshError } from '@mesh/contract';

/** A config area: env variable name → zod schema (with its default). */
export type ConfigSpec = Record<string, z.ZodType>;
export type ConfigOf<S extends ConfigSpec> = { [K in keyof S]: z.output<S[K]> };

/** Settings whose values are secrets: named in a refusal, never shown (start-up errors end up in logs). */
const SECRET_NAME = /(_SECRET|_TOKEN|_PASSWORD|_KEY)$/;

const shownValue = (name: string, raw: string | undefined) => (SECRET_NAME.test(name) && raw ? '<hidden>' : JSON.stringify(raw));

/**
 * Reads and validates env variables. A bad value throws one CONFIG_INVALID error naming every
 * offending variable, so the process stops at start with a one-line message.
 */
export function loadConfig<S extends ConfigSpec>(spec: S, env: NodeJS.ProcessEnv = process.env): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, schema] of Object.entries(spec)) {
    const raw = env[name];
    const parsed = schema.safeParse(raw === '' ? undefined : raw);
    if (parsed.success) out[name] = parsed.data;
    else problems.push(`${name}=${shownValue(name, raw)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  }
  if (problems.length > 0) {
    throw new MeshError('CONFIG_INVALID', `invalid configuration: ${problems.join(' | ')}`);
  }
  return out as ConfigOf<S>;
}

const HOST_PORT = /^(\[[0-9a-fA-F:]+\]|[a-zA-Z0-9.-]+):(\d{1,5})$/;

/** `host:port[,host:port…]` → list; refuses anything else with a message a human can act on. */
export const brokerList = z
  .string()
  .default('127.0.0.1:9092')
  .transform((s, ctx) => {
    const list = s.split(',').map((b) => b.trim());
    for (const b of list) {
      const m = HOST_PORT.exec(b);
      if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
        ctx.addIssue({ code: 'custom', message: `expected host:port[,host:port...], "${b}" is not host:port` });
        return z.NEVER;
      }
    }
    return list;
  });

/** A `postgres://` URL. */
export const postgresUrl = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((s) => {
      try {
        const u = new URL(s);
        return (u.protocol === 'postgres:' || u.protocol === 'postgresql:') && u.pathname.length > 1;
      } catch {
        return false;
      }
    }, 'expected postgres://user@host:port/database');

/** A TCP port. */
export const port = (fallback: number) => z.coerce.number().int().min(1).max(65535).default(fallback);

/** A positive integer with a default. */
export const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** `true/false/1/0/yes/no`. */
export const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? fallback : ['true', '1', 'yes'].includes(v)));
