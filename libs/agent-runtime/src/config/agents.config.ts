import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { MeshError } from '@mesh/contract';
import { databaseSpec, flag, httpSpec, kafkaSpec, loadConfig, port, positiveInt, type ConfigOf } from '@mesh/config';

/** Per-server overrides of the agents' MCP server specs, by server name (e.g. the billing URL per environment). */
const mcpOverrides = z
  .string()
  .optional()
  .transform((s, ctx) => {
    if (!s) return {} as Record<string, Record<string, unknown>>;
    try {
      const v: unknown = JSON.parse(s);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      return v as Record<string, Record<string, unknown>>;
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `expected a JSON object {"server": {"url": "..."}}: ${String(err)}` });
      return z.NEVER;
    }
  });

/** A team worker's private Ed25519 JWK (with `kid`) that signs its events (docs/agents.md, "Team mode"). */
const eventKeySchema = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  kid: z.string().min(1).max(200),
  x: z.string().min(1),
  d: z.string().min(1),
});

/** The private JWK that signs the worker's events, as JSON. */
export type EventSigningKey = z.infer<typeof eventKeySchema>;

const eventKey = z
  .string()
  .optional()
  .transform((s, ctx) => {
    if (!s?.trim()) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(s);
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: 'expected a private Ed25519 JWK as JSON ({"kty":"OKP","crv":"Ed25519","kid":…,"x":…,"d":…})',
      });
      return z.NEVER;
    }
    const key = eventKeySchema.safeParse(json);
    if (!key.success) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a private Ed25519 JWK with kid: ${key.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      });
      return z.NEVER;
    }
    return key.data;
  });

/** Everything the agents reads from the environment, validated at start. */
export const agentsConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  ...httpSpec,
  AGENTS_PORT: port(8082),
  /** Which of the worker's agents this process runs (comma-separated ids; unset: all of them). */
  AGENTS_RUN: z
    .string()
    .optional()
    .transform((s) => {
      const ids = (s ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
      return ids.length > 0 ? ids : undefined;
    }),
  AGENTS_WORKER_ID: z.string().min(1).default(`${hostname()}-${process.pid}`),
  AGENTS_MCP_SERVERS: mcpOverrides,
  AGENTS_EXECUTION_LEASE_MS: positiveInt(15000),
  AGENTS_TOOL_TIMEOUT_MS: positiveInt(30000),
  AGENTS_RECONCILE_INTERVAL_MS: positiveInt(1000),
  AGENTS_UNKNOWN_WAIT_MS: positiveInt(60000),
  AGENTS_HEARTBEAT_INTERVAL_MS: positiveInt(5000),
  AGENTS_CONSUMER_SESSION_TIMEOUT_MS: positiveInt(10000),
  AGENTS_RETRY_BUDGET: positiveInt(5),
  /** Overrides every agent's own in-flight limit when set. */
  AGENTS_MAX_IN_FLIGHT: z.coerce.number().int().positive().optional(),
  /** Commands of one tenant in flight at once per agent per process (bounded work per tenant). */
  AGENTS_TENANT_MAX_IN_FLIGHT: z.coerce.number().int().positive().optional(),
  /** When set, the agents register their cards here at start (see docs/agents.md). */
  AGENTS_DIRECTORY_URL: z.string().url().optional(),
  /** Bearer token (API key or JWT) of the tenant owning the agents, for the directory. */
  AGENTS_DIRECTORY_TOKEN: z.string().min(1).optional(),
  /**
   * Legacy, for a trusted platform worker: the HS256 secret tool tokens are minted with here. When
   * set it wins over AGENTS_TOKEN_URL; team workers leave it unset (docs/agents.md, "Tool tokens").
   */
  AGENTS_TOOL_TOKEN_SECRET: z.string().min(16).optional(),
  /**
   * The dispatcher's token endpoint (e.g. http://dispatcher:8080/oauth/token): each run command's
   * grant is exchanged there for the tokens of the tool servers configured with `tokenAudience`.
   */
  AGENTS_TOKEN_URL: z.string().url().optional(),
  /** Record tool arguments and results on execute_tool spans (off by default: they may hold personal data). */
  AGENTS_TRACE_TOOL_PAYLOADS: flag(false),
  /**
   * Ledger rows of a task (executions, settled effects, cancels) are deleted this long after its
   * last turn settled (default 30 days; 0 keeps them). Must exceed the command topics' retention:
   * the agents refuse to start otherwise (see docs/operations.md).
   */
  AGENTS_LEDGER_RETENTION_MS: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(30 * 24 * 3600 * 1000),
  /** Pause between the ledger retention sweeps. */
  AGENTS_LEDGER_SWEEP_MS: positiveInt(60_000),
  /** How often consumer lag, in-flight and open unknown outcomes are sampled into /metrics. */
  AGENTS_METRICS_INTERVAL_MS: positiveInt(5000),
  /** How long a stopping worker lets in-flight turns finish before it gives them up (the chart sets it). */
  DRAIN_TIMEOUT_MS: positiveInt(10000),
  /** Bearer token the /ops endpoints require (unset: every /ops request is refused with 401). */
  AGENTS_OPS_TOKEN: z.string().min(8).optional(),
  /**
   * Team mode: the private Ed25519 JWK (JSON, with `kid`) the team's binding holds the public half
   * of. Set, the worker sends its events to the team events topic, each signed, and creates no
   * topic (docs/agents.md, "Team mode"). AGENTS_EVENT_KEY_FILE names a file holding it instead.
   */
  AGENTS_EVENT_KEY: eventKey,
  /** The chart's name for AGENTS_RUN (comma-separated agent ids); wins when both are set. */
  AGENTS_AGENT_IDS: z.string().optional(),
  /** The agent group this process belongs to (the chart sets it): `agentGroup` on log lines, label `agent_group` on /metrics. */
  AGENTS_GROUP: z.string().min(1).max(63).optional(),
};

export type AgentsConfig = ConfigOf<typeof agentsConfigSpec>;

export function loadAgentsConfig(env: NodeJS.ProcessEnv = process.env): AgentsConfig {
  return loadConfig(agentsConfigSpec, withEventKeyFile(env.AGENTS_AGENT_IDS ? { ...env, AGENTS_RUN: env.AGENTS_AGENT_IDS } : env));
}

/** AGENTS_EVENT_KEY_FILE read into AGENTS_EVENT_KEY (a secret mounted as a file stays out of the environment). */
function withEventKeyFile(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const file = env.AGENTS_EVENT_KEY_FILE?.trim();
  if (!file) return env;
  if (env.AGENTS_EVENT_KEY?.trim()) throw new MeshError('CONFIG_INVALID', 'set AGENTS_EVENT_KEY or AGENTS_EVENT_KEY_FILE, not both');
  let key: string;
  try {
    key = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new MeshError('CONFIG_INVALID', `AGENTS_EVENT_KEY_FILE: cannot read ${file}`, { cause });
  }
  return { ...env, AGENTS_EVENT_KEY: key };
}
