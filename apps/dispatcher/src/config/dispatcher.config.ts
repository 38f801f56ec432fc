import { z } from 'zod';
import { databaseSpec, flag, httpSpec, kafkaSpec, loadConfig, port, positiveInt, type ConfigOf } from '@mesh/config';
import { isAgentId } from '@mesh/contract';
import { parseByteSize } from '@mesh/service';
import { usableCpus } from './usable-cpus.js';

/** Most processes DISPATCHER_PROCESSES may ask for: each holds its own Kafka and Postgres connections. */
export const MAX_DISPATCHER_PROCESSES = 64;

/** `auto` (one per usable CPU: a container's CPU limit counts) or a count from 1 to {@link MAX_DISPATCHER_PROCESSES}. */
function dispatcherProcesses() {
  return z
    .string()
    .default('1')
    .transform((raw, ctx) => {
      const v = raw.trim().toLowerCase();
      if (v === 'auto') return Math.min(usableCpus(), MAX_DISPATCHER_PROCESSES);
      const n = /^\d{1,3}$/.test(v) ? Number(v) : NaN;
      if (!(n >= 1 && n <= MAX_DISPATCHER_PROCESSES)) {
        ctx.addIssue({ code: 'custom', message: `expected auto or a whole number from 1 to ${MAX_DISPATCHER_PROCESSES}` });
        return z.NEVER;
      }
      return n;
    });
}

function byteSize(fallback: string) {
  return z
    .string()
    .default(fallback)
    .transform((raw, ctx) => {
      const n = parseByteSize(raw);
      if (!Number.isSafeInteger(n)) {
        ctx.addIssue({ code: 'custom', message: 'expected a size like 1048576, 512kb or 1mb' });
        return z.NEVER;
      }
      return n;
    });
}

/** Everything the dispatcher reads from the environment, validated at start. */
export const dispatcherConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  ...httpSpec,
  DISPATCHER_PORT: port(8080),
  /**
   * Processes serving the port (node:cluster workers, each a full replica); `auto` = one per CPU
   * this process may use (the cgroup's CPU quota, a container's limit, caps it).
   * 1 (the default): the dispatcher is the process itself.
   */
  DISPATCHER_PROCESSES: dispatcherProcesses(),
  /** Base URL callers reach this dispatcher at; agent cards point their interfaces there. */
  DISPATCHER_PUBLIC_URL: z.string().url().optional(),
  /**
   * Issuer (`iss`) of the grants and tool tokens this dispatcher signs; tool servers check it.
   * Default: DISPATCHER_PUBLIC_URL, else http://localhost:<DISPATCHER_PORT>. Replicas share it.
   */
  DISPATCHER_ISSUER: z.string().url().optional(),
  /**
   * PKCS#8 PEM file of the Ed25519 key grants and tool tokens are signed with (docs/dispatcher.md,
   * "Grants and tool tokens"). Unset (and DISPATCHER_SIGNING_KEY unset): a key made at start, valid
   * only while this replica runs — replicas must share a configured key.
   */
  DISPATCHER_SIGNING_KEY_FILE: z.string().min(1).optional(),
  /** The same key inline (PKCS#8 PEM); the file wins when both are set. */
  DISPATCHER_SIGNING_KEY: z.string().min(1).optional(),
  /** The key signed with before a rotation (PKCS#8 PEM file): still published and accepted, never used to sign. */
  DISPATCHER_SIGNING_KEY_PREVIOUS_FILE: z.string().min(1).optional(),
  /** Longest a run command's grant is valid (it also ends at the task's deadline). */
  DISPATCHER_GRANT_TTL_MS: positiveInt(3_600_000),
  /**
   * An agent also served at the host root (`POST /`, the HTTP+JSON routes, `/.well-known/agent-card.json`)
   * for clients that only take a host (the A2A TCK); unset: none. Same authentication and visibility.
   */
  DISPATCHER_ROOT_AGENT: z
    .string()
    .optional()
    .transform((s) => s?.trim() || undefined)
    .refine((s) => s === undefined || isAgentId(s), 'must be an agent id (lower-case slug)'),
  /** Largest request body accepted (body-parser syntax: 512kb, 1mb…). */
  DISPATCHER_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'expected a size like 512kb or 1mb')
    .default('1mb'),
  /** Longest a blocking SendMessage waits before returning the task as it is (callers may ask for less). */
  DISPATCHER_BLOCKING_TIMEOUT_MS: positiveInt(30000),
  /** A blocking send's task (one shared poll per task) is re-read this often (covers events consumed by another replica). */
  DISPATCHER_WAIT_POLL_MS: positiveInt(250),
  /** Cache-Control max-age of served agent cards. */
  DISPATCHER_CARD_MAX_AGE_S: z.coerce.number().int().min(0).default(60),
  /**
   * SSE: a followed task is re-read this often, once per replica however many streams follow it
   * (covers changes committed on another replica that it did not tell: a cancel, a deadline, a
   * notification missed while the replica was not listening).
   */
  DISPATCHER_STREAM_POLL_MS: positiveInt(1000),
  /** SSE: open streams (SendStreamingMessage, SubscribeToTask) per tenant and replica; over it: 429 TOO_MANY_STREAMS. */
  DISPATCHER_MAX_STREAMS_PER_TENANT: positiveInt(100),
  /** SSE: longest a stream stays open. */
  DISPATCHER_STREAM_MAX_MS: positiveInt(3_600_000),
  /**
   * SSE: how many of a task's newest stream events stay stored for callers that resume with
   * Last-Event-ID (older ids answer an error naming the oldest kept); all go with the task.
   */
  DISPATCHER_STREAM_EVENTS_KEPT: positiveInt(1000),
  /** Deadline of tasks whose caller gives none (0 = none). */
  DISPATCHER_DEFAULT_DEADLINE_MS: z.coerce.number().int().min(0).default(0),
  /**
   * A turn no worker has started (still SUBMITTED) this long after it was accepted is FAILED
   * (reason NOT_STARTED); its run command carries the time (`start_by_unix_ms`) and workers do not
   * start it later. Keep it below the command topics' retention: a command the broker deleted unread
   * can never start. 0 = never (such a task waits for its deadline, if it has one).
   */
  DISPATCHER_START_TIMEOUT_MS: z.coerce.number().int().min(0).default(86_400_000),
  /** Longest deadline a caller may ask for (0 = unbounded). */
  DISPATCHER_MAX_DEADLINE_MS: z.coerce.number().int().min(0).default(0),
  /**
   * After a task's deadline, how long its worker's own report (it stops at the deadline and says
   * so) may still arrive before the dispatcher fails the task itself.
   */
  DISPATCHER_DEADLINE_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Longest a delegating task waits for its children unless it asks for less (docs/agents.md, "Delegation"). */
  DISPATCHER_DELEGATION_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  /** A child's deadline is at most its parent's remaining deadline minus this, so the parent has time to use the results. */
  DISPATCHER_DELEGATION_RESERVE_MS: z.coerce.number().int().min(0).default(2_000),
  /** Retries one task tree may spend across every hop: turn takeovers after a crash and tool-call retries. */
  DISPATCHER_TREE_RETRY_BUDGET: z.coerce.number().int().min(0).default(20),
  /** Pause between sweeps for delegation waits that are over (a deadline passed, a wake-up lost to a crash). */
  DISPATCHER_DELEGATION_SWEEP_MS: positiveInt(1000),
  /**
   * Most bytes (JSON) of children's artifacts a delegating task's resumed turn gets; a child whose
   * artifacts do not fit comes `truncated` (without them; GetTask has them).
   */
  DISPATCHER_DELEGATION_RESULTS_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024 * 1024),
  /**
   * A delegating turn that ended this long ago with no wait recorded (its children could not be
   * created) is failed by the delegation sweep; shorter would race an open() being retried.
   */
  DISPATCHER_DELEGATION_OPEN_GRACE_MS: z.coerce.number().int().min(0).default(60_000),
  /** Settled tasks (and their dedup rows, push configs and deliveries) are deleted this long after their last change; 0 keeps them. */
  DISPATCHER_TASK_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30 * 86_400_000),
  /** Pause between the lifecycle sweeps (deadlines passed, retention). */
  DISPATCHER_LIFECYCLE_SWEEP_MS: positiveInt(5000),
  /**
   * One replica of the fleet runs the catch-up sweeps and idle polls (push retries, delegation
   * waits, lifecycle, outbox); the others try to take the lease this often, so a replica's death
   * delays them by at most this long.
   */
  DISPATCHER_SWEEP_LEASE_RETRY_MS: positiveInt(5000),
  /** New-work requests per second per tenant, per replica (token bucket). */
  DISPATCHER_TENANT_RATE_PER_S: positiveInt(50),
  /** Bucket size of the tenant rate limit. */
  DISPATCHER_TENANT_BURST: positiveInt(100),
  /**
   * Request-body bytes per second per tenant, per replica (token bucket charged from Content-Length
   * before a body is read; over it: 429 TENANT_BYTES_EXCEEDED). Bounds the event-loop time one
   * tenant's large bodies take from the others. 0 = no byte budget.
   */
  DISPATCHER_TENANT_BYTES_PER_S: byteSize('1mb'),
  /** Bucket size of the byte budget; a body larger than it waits for a full bucket. */
  DISPATCHER_TENANT_BYTES_BURST: byteSize('4mb'),
  /** Refuse new work (503) for agents without a live worker heartbeat. */
  DISPATCHER_REQUIRE_HEALTHY_WORKER: flag(true),
  /** Refuse new work (503) when the agent's worker group lags more than this many commands. */
  DISPATCHER_MAX_AGENT_BACKLOG: positiveInt(10_000),
  /** How long a measured backlog is reused. */
  DISPATCHER_BACKLOG_CHECK_MS: positiveInt(1000),
  /** How often each agent's command backlog is read from the broker for `/metrics` (mesh_consumer_lag, mesh_agent_backlog). */
  DISPATCHER_METRICS_INTERVAL_MS: positiveInt(15_000),
  /** Split mesh_tasks_total and mesh_admission_refusals_total by tenant (false: `tenant="_all"`). */
  METRICS_TENANT_LABELS: flag(true),
  /** Distinct (tenant, agent) pairs with series of their own; later ones share `_other` (docs/operations.md). */
  METRICS_MAX_TENANT_AGENT_PAIRS: z.coerce.number().int().min(0).default(500),
  /** Longest an accept waits for a backlog measurement before going on without it (Kafka slow or down). */
  DISPATCHER_BACKLOG_WAIT_MS: positiveInt(250),
  /** Retry-After of 503 refusals (seconds). */
  DISPATCHER_RETRY_AFTER_S: positiveInt(5),
  /** Private CIDRs push webhooks may reach (comma-separated; tests: 127.0.0.0/8). Public addresses are always allowed. */
  PUSH_EGRESS_ALLOW_CIDRS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    ),
  /** Attempts per push delivery before it is recorded as failed. */
  PUSH_MAX_ATTEMPTS: positiveInt(10),
  /** First retry delay; doubles per attempt up to PUSH_BACKOFF_MAX_MS. */
  PUSH_BACKOFF_BASE_MS: positiveInt(500),
  PUSH_BACKOFF_MAX_MS: positiveInt(60_000),
  /** Timeout of one webhook POST. */
  PUSH_TIMEOUT_MS: positiveInt(5000),
  /** Poll interval of the delivery loop when idle (new deliveries wake it at once on this replica). */
  PUSH_POLL_MS: positiveInt(250),
  OUTBOX_BATCH_SIZE: positiveInt(500),
  /** Relay poll interval when idle; an accept wakes it at once. */
  OUTBOX_IDLE_MS: positiveInt(500),
  /**
   * After an accept wakes the relay it waits this long before claiming. 0 (default): at once —
   * under load, the accepts committed while a batch was being sent already go together in the next.
   */
  OUTBOX_LINGER_MS: z.coerce.number().int().min(0).max(1000).default(0),
  /**
   * How often the broker's limit of each command topic (`max.message.bytes`) is read again; a
   * message whose command would pass it is refused at accept (COMMAND_TOO_LARGE).
   */
  OUTBOX_LIMITS_REFRESH_MS: positiveInt(60_000),
  /**
   * Bearer token of the operator endpoints (`/ops/teams`: team bindings). Unset: they answer 503
   * naming this setting (no binding can be made; events on the team topic are all refused).
   */
  DISPATCHER_OPS_TOKEN: z.string().min(8).optional(),
  /** How often team bindings are read again; a revocation made on another replica holds here within this long. */
  DISPATCHER_TEAMS_REFRESH_MS: positiveInt(30_000),
  /** Most bytes a task's JSON may reach through follow-up turns; a turn past it is refused (TASK_TOO_LARGE). */
  DISPATCHER_MAX_TASK_BYTES: positiveInt(4 * 1024 * 1024),
};

export type DispatcherConfig = ConfigOf<typeof dispatcherConfigSpec>;

/** Reads and validates the dispatcher's environment. */
export function loadDispatcherConfig(env: NodeJS.ProcessEnv = process.env): DispatcherConfig {
  return loadConfig(dispatcherConfigSpec, env);
}
