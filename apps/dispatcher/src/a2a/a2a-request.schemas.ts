import { z } from 'zod';
import { hasControlCharacter, hasLoneSurrogate } from '@mesh/contract';

/**
 * The A2A 1.0 request shapes (lf.a2a.v1, as `@a2a-js/sdk` 1.3 generates them) as the dispatcher
 * accepts them on the wire, in the proto3 JSON mapping with lowerCamelCase names. Stricter than
 * the SDK's `fromJSON`, which coerces whatever it gets (`role: 42` becomes UNRECOGNIZED,
 * `parts: [null]` throws a TypeError): every request is checked here before the SDK sees it.
 */
export const A2A_LIMITS = {
  /** Longest id (messageId, contextId, taskId, referenceTaskIds, push config ids, tenant). */
  idChars: 256,
  /** Deepest nesting of a metadata object or a `data` part value. */
  jsonDepth: 32,
  /** Largest metadata object, serialised (UTF-16 code units of its JSON). */
  metadataChars: 64 * 1024,
  /** Longest metadata key. */
  metadataKeyChars: 256,
  /** Most parts of one message. */
  parts: 256,
  /** Longest short string (mediaType, filename, extension URI, auth scheme, token). */
  shortChars: 2048,
  /** Most entries of a list field (extensions, referenceTaskIds, acceptedOutputModes). */
  listItems: 64,
  /** Longest page token. */
  pageTokenChars: 1024,
  /**
   * Deadlines (`metadata.deadlineUnixMs`, `A2A-Deadline-Ms`, `x-request-timeout-ms`) at most this
   * far ahead: 24 days, below the 2^31-1 ms (24.8 days) a Node timer can wait, so no worker arms
   * a timer that overflows (Node would fire it after 1 ms).
   */
  deadlineAheadMs: 24 * 86_400_000,
  /** Largest historyLength (int32). */
  historyLength: 2_147_483_647,
} as const;

/**
 * What is wrong with a string the dispatcher would store: Postgres `text` and `jsonb` hold neither
 * NUL nor an unpaired surrogate, so both are refused (never stored lossily).
 */
export function stringProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain NUL (U+0000)';
  if (hasLoneSurrogate(s)) return 'must be well-formed Unicode (a lone surrogate was found)';
  return undefined;
}

/** Any stored string: no NUL, no lone surrogate, bounded. */
export const text = (max?: number) => {
  const base = max === undefined ? z.string() : z.string().max(max, `must be at most ${max} characters`);
  return base.superRefine((s, ctx) => {
    const p = stringProblem(s);
    if (p) ctx.addIssue({ code: 'custom', message: p });
  });
};

/** What is wrong with an id, or undefined. */
export function idProblem(s: string): string | undefined {
  if (s.trim() === '') return 'must not be empty';
  if (s.length > A2A_LIMITS.idChars) return `must be at most ${A2A_LIMITS.idChars} characters`;
  if (hasControlCharacter(s)) return 'must not contain control characters';
  return stringProblem(s);
}

/** An identifier: non-empty, at most 256 characters, no control characters, well-formed. */
export const id = z.string().superRefine((s, ctx) => {
  const p = idProblem(s);
  if (p) ctx.addIssue({ code: 'custom', message: p });
});

/** A request's own `tenant`: empty is proto3's default, the same as absent (the caller's tenant). */
const tenantId = z.string().superRefine((s, ctx) => {
  const p = s === '' ? undefined : idProblem(s);
  if (p) ctx.addIssue({ code: 'custom', message: p });
});

interface JsonProblem {
  path: Array<string | number>;
  message: string;
}

/**
 * Walks a JSON value (metadata, a `data` part) without recursing past `maxDepth`, so a
 * 10,000-deep value costs nothing; returns the first problem with its path, and the serialised
 * size as counted so far.
 */
export function jsonProblem(value: unknown, opts: { maxDepth: number; maxChars?: number; keyChars?: number }): JsonProblem | undefined {
  let chars = 0;
  const visit = (v: unknown, path: Array<string | number>, depth: number): JsonProblem | undefined => {
    // Named by its top-level key: the full path would be as deep as the problem.
    if (depth > opts.maxDepth) return { path: path.slice(0, 1), message: `must not be nested deeper than ${opts.maxDepth} levels` };
    if (typeof v === 'string') {
      chars += v.length + 2;
      const p = stringProblem(v);
      return p ? { path, message: p } : undefined;
    }
    if (v === null || typeof v === 'boolean') {
      chars += 5;
      return undefined;
    }
    if (typeof v === 'number') {
      chars += 24;
      return Number.isFinite(v) ? undefined : { path, message: 'must be a finite number' };
    }
    if (Array.isArray(v)) {
      chars += 2;
      for (let i = 0; i < v.length; i++) {
        const p = visit(v[i], [...path, i], depth + 1);
        if (p) return p;
        if (opts.maxChars !== undefined && chars > opts.maxChars) break;
      }
      return undefined;
    }
    if (typeof v === 'object') {
      chars += 2;
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        chars += k.length + 3;
        const kp =
          stringProblem(k) ??
          (opts.keyChars !== undefined && k.length > opts.keyChars ? `must be at most ${opts.keyChars} characters` : undefined);
        if (kp) return { path: [...path, k], message: `key ${kp}` };
        const p = visit(child, [...path, k], depth + 1);
        if (p) return p;
        if (opts.maxChars !== undefined && chars > opts.maxChars) break;
      }
      return undefined;
    }
    return { path, message: 'must be a JSON value' };
  };
  const found = visit(value, [], 0);
  if (found) return found;
  if (opts.maxChars !== undefined && chars > opts.maxChars) {
    return { path: [], message: `must be at most ${opts.maxChars / 1024} KiB serialised` };
  }
  return undefined;
}

/** A google.protobuf.Struct (metadata): an object, bounded in depth, size and key length. */
export const struct = z.unknown().superRefine((v, ctx) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
    return;
  }
  const p = jsonProblem(v, { maxDepth: A2A_LIMITS.jsonDepth, maxChars: A2A_LIMITS.metadataChars, keyChars: A2A_LIMITS.metadataKeyChars });
  if (p) ctx.addIssue({ code: 'custom', message: p.message, path: p.path });
});

/** A google.protobuf.Value (`data` part): any JSON value but null, bounded in depth. */
const anyValue = z.unknown().superRefine((v, ctx) => {
  if (v === null) {
    ctx.addIssue({ code: 'custom', message: 'must not be null (the A2A JSON mapping would drop the content)' });
    return;
  }
  const p = jsonProblem(v, { maxDepth: A2A_LIMITS.jsonDepth });
  if (p) ctx.addIssue({ code: 'custom', message: p.message, path: p.path });
});

export const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

/** An absolute http(s) URL. */
export const httpUrl = text(A2A_LIMITS.shortChars).superRefine((s, ctx) => {
  let ok: boolean;
  try {
    const u = new URL(s);
    ok = u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    ok = false;
  }
  if (!ok) ctx.addIssue({ code: 'custom', message: 'refused: not an absolute http or https URL' });
});

const CONTENT_KEYS = ['text', 'raw', 'url', 'data'] as const;

/** A Part: exactly one of text, raw (base64), url, data. */
export const part = z
  .object({
    text: text().optional(),
    raw: z.string().regex(BASE64, 'must be base64').optional(),
    url: text(A2A_LIMITS.shortChars).min(1, 'must not be empty').optional(),
    data: anyValue.optional(),
    metadata: struct.optional(),
    filename: text(A2A_LIMITS.shortChars).optional(),
    mediaType: text(A2A_LIMITS.shortChars).optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    const given = CONTENT_KEYS.filter((k) => p[k] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `must have exactly one content field (text, raw, url or data); ${given.length ? `got ${given.join(', ')}` : 'got none'}`,
      });
    }
  });

export const list = <T extends z.ZodType>(item: T) =>
  z.array(item).max(A2A_LIMITS.listItems, `must have at most ${A2A_LIMITS.listItems} entries`);

/** A short description of any value (never its whole text: it may be 10,000 levels deep). */
export function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.slice(0, 32));
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (v === undefined) return 'nothing';
  return Array.isArray(v) ? 'an array' : 'an object';
}

/** ROLE_USER, by name or by its proto3 number; the agent role is the workers' own. */
const role = z.unknown().superRefine((r, ctx) => {
  if (r !== 'ROLE_USER' && r !== 1) {
    ctx.addIssue({ code: 'custom', message: `must be "ROLE_USER" (callers send user messages; got ${describe(r)})` });
  }
});

/** A deadline in milliseconds since the epoch: a positive integer (number or decimal string), at most 24 days ahead. */
export function deadlineProblem(v: unknown, now = Date.now()): string | undefined {
  const n = typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) {
    return 'must be a positive integer (milliseconds since the epoch)';
  }
  if (n > now + A2A_LIMITS.deadlineAheadMs) return `must be at most ${A2A_LIMITS.deadlineAheadMs / 86_400_000} days ahead`;
  return undefined;
}

export const message = z
  .object({
    messageId: id,
    contextId: id.optional(),
    taskId: id.optional(),
    role,
    parts: z.array(part).min(1, 'must not be empty').max(A2A_LIMITS.parts, `must have at most ${A2A_LIMITS.parts} entries`),
    metadata: struct.optional(),
    extensions: list(text(A2A_LIMITS.shortChars)).optional(),
    referenceTaskIds: list(id).optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    const meta = m.metadata as Record<string, unknown> | undefined;
    if (meta?.deadlineUnixMs === undefined) return;
    const p = deadlineProblem(meta.deadlineUnixMs);
    if (p) ctx.addIssue({ code: 'custom', message: p, path: ['metadata', 'deadlineUnixMs'] });
  });

/**
 * A push config's token and credentials travel as HTTP header values of every notification:
 * printable ASCII only (a CR/LF, another control character or a non-Latin-1 character would make
 * each delivery fail, and the config looked accepted). The scheme is an RFC 7235 token.
 */
export const headerValue = z
  .string()
  .max(A2A_LIMITS.shortChars, `must be at most ${A2A_LIMITS.shortChars} characters`)
  .regex(/^[\x20-\x7e]*$/, 'must be printable ASCII (it is sent as an HTTP header value)');
export const authScheme = z
  .string()
  .max(64, 'must be at most 64 characters')
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "must be an HTTP authentication scheme name like Bearer (letters, digits, !#$%&'*+.^_`|~-)");

const authentication = z.object({ scheme: authScheme.optional(), credentials: headerValue.optional() }).strict();

/** TaskPushNotificationConfig; `taskId` comes from the path (REST) or the params (JSON-RPC). */
export const pushConfig = z
  .object({
    tenant: tenantId.optional(),
    id: id.optional(),
    taskId: id.optional(),
    url: httpUrl,
    token: headerValue.optional(),
    authentication: authentication.optional(),
  })
  .strict();

const int = (min: number, max: number) =>
  z.unknown().superRefine((v, ctx) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` });
    }
  });

export const historyLength = int(0, A2A_LIMITS.historyLength);

const configuration = z
  .object({
    acceptedOutputModes: list(text(A2A_LIMITS.shortChars)).optional(),
    taskPushNotificationConfig: pushConfig.optional(),
    historyLength: historyLength.optional(),
    returnImmediately: z.boolean().optional(),
  })
  .strict();

/**
 * A2A's TaskState enum in protobuf order (a request may give the name or its number), with
 * UNSPECIFIED: what a ListTasks filter accepts. The states a task can have are `TaskStates` of
 * `@mesh/contract`.
 */
export const A2A_TASK_STATE_ENUM = [
  'TASK_STATE_UNSPECIFIED',
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;

const taskState = z.unknown().superRefine((v, ctx) => {
  const ok =
    (typeof v === 'string' && (A2A_TASK_STATE_ENUM as readonly string[]).includes(v)) ||
    (Number.isInteger(v) && (v as number) >= 0 && (v as number) < A2A_TASK_STATE_ENUM.length);
  if (!ok) ctx.addIssue({ code: 'custom', message: `must be one of ${A2A_TASK_STATE_ENUM.join(', ')}` });
});

/**
 * RFC 3339 date-time with a zone (google.protobuf.Timestamp's JSON form). A Timestamp has no leap
 * second (its seconds are 0–59, leap seconds smeared), so `:60` is refused with its own reason.
 */
const RFC3339 = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i;
const LEAP_SECOND = /^\d{4}-\d\d-\d\dT\d\d:\d\d:60/i;
/** Date.parse rolls 2025-02-31 over to March 3rd: the day must exist in its month. */
function realDate(s: string): boolean {
  const [y, m, d] = s.slice(0, 10).split('-').map(Number) as [number, number, number];
  const last = new Date(0);
  last.setUTCFullYear(y, m, 0); // day 0 of the next month; setUTCFullYear keeps years 0-99 as they are
  return d <= last.getUTCDate();
}
export const timestamp = z.string().superRefine((s, ctx) => {
  if (LEAP_SECOND.test(s))
    ctx.addIssue({ code: 'custom', message: 'has no leap second: a google.protobuf.Timestamp counts seconds 0 to 59' });
  else if (!RFC3339.test(s) || Number.isNaN(Date.parse(s)) || !realDate(s))
    ctx.addIssue({ code: 'custom', message: 'must be an RFC 3339 timestamp like 2025-01-31T12:00:00Z' });
});

export const pageToken = z
  .string()
  .max(A2A_LIMITS.pageTokenChars, `must be at most ${A2A_LIMITS.pageTokenChars} characters`)
  .regex(/^[A-Za-z0-9_=-]*$/, 'is not a token this server issued');

const tenant = { tenant: tenantId.optional() };

/** The params of each JSON-RPC method (= the body of the matching HTTP+JSON route). */
export const A2A_PARAMS = {
  SendMessage: z.object({ ...tenant, message, configuration: configuration.optional(), metadata: struct.optional() }).strict(),
  GetTask: z.object({ ...tenant, id, historyLength: historyLength.optional() }).strict(),
  ListTasks: z
    .object({
      ...tenant,
      contextId: id.optional(),
      status: taskState.optional(),
      pageSize: int(1, 100).optional(),
      pageToken: pageToken.optional(),
      historyLength: historyLength.optional(),
      statusTimestampAfter: timestamp.optional(),
      includeArtifacts: z.boolean().optional(),
    })
    .strict(),
  CancelTask: z.object({ ...tenant, id, metadata: struct.optional() }).strict(),
  SubscribeToTask: z.object({ ...tenant, id }).strict(),
  CreateTaskPushNotificationConfig: pushConfig.extend({ taskId: id }).strict(),
  GetTaskPushNotificationConfig: z.object({ ...tenant, taskId: id, id }).strict(),
  DeleteTaskPushNotificationConfig: z.object({ ...tenant, taskId: id, id }).strict(),
  // Every config of a task comes in one page (nextPageToken is always empty): no token is ours.
  ListTaskPushNotificationConfigs: z
    .object({
      ...tenant,
      taskId: id,
      pageSize: int(0, 100).optional(),
      pageToken: z.literal('', 'is not a token this server issued').optional(),
    })
    .strict(),
  GetExtendedAgentCard: z.object({ ...tenant }).strict(),
} as const;

export type A2aMethod = keyof typeof A2A_PARAMS;
A2A_PARAMS satisfies Record<string, z.ZodType>;
