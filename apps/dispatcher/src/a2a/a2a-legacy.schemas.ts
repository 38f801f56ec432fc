import { z } from 'zod';
import {
  A2A_LIMITS,
  authScheme,
  BASE64,
  deadlineProblem,
  describe,
  headerValue,
  historyLength,
  httpUrl,
  id,
  jsonProblem,
  list,
  struct,
  text,
} from './a2a-request.schemas.js';

/**
 * The A2A 0.3 request shapes the SDK's compatibility layer translates: JSON-RPC params (the 0.3
 * JSON schema: `kind` discriminators, `role: "user"`) and HTTP+JSON bodies (proto3 JSON of the
 * 0.3 proto: `content`, `ROLE_USER`). Held to the same limits as the 1.0 shapes, since the
 * translated request is stored the same way.
 */

/** A JSON object bounded in depth (a 0.3 `data` part holds an object, not any value). */
const jsonObject = z.unknown().superRefine((v, ctx) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
    return;
  }
  const p = jsonProblem(v, { maxDepth: A2A_LIMITS.jsonDepth });
  if (p) ctx.addIssue({ code: 'custom', message: p.message, path: p.path });
});

const short = () => text(A2A_LIMITS.shortChars);

/** The deadline in message metadata, as in 1.0. */
function checkDeadline(metadata: unknown, ctx: z.RefinementCtx): void {
  const meta = metadata as Record<string, unknown> | undefined;
  if (meta?.deadlineUnixMs === undefined) return;
  const p = deadlineProblem(meta.deadlineUnixMs);
  if (p) ctx.addIssue({ code: 'custom', message: p, path: ['metadata', 'deadlineUnixMs'] });
}

// --- JSON-RPC (0.3 JSON schema) ---

const fileContent = z
  .object({
    uri: short().min(1, 'must not be empty').optional(),
    bytes: z.string().regex(BASE64, 'must be base64').optional(),
    name: short().optional(),
    mimeType: short().optional(),
  })
  .strict()
  .superRefine((f, ctx) => {
    if ((f.uri === undefined) === (f.bytes === undefined))
      ctx.addIssue({ code: 'custom', message: 'must have exactly one of uri or bytes' });
  });

/** A 0.3 Part: `kind` says which content field it carries. */
const rpcPart = z
  .object({
    kind: z.enum(['text', 'file', 'data'], 'must be "text", "file" or "data"'),
    text: text().optional(),
    file: fileContent.optional(),
    data: jsonObject.optional(),
    metadata: struct.optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    for (const k of ['text', 'file', 'data'] as const) {
      if (k === p.kind && p[k] === undefined) ctx.addIssue({ code: 'custom', message: 'is required', path: [k] });
      if (k !== p.kind && p[k] !== undefined) ctx.addIssue({ code: 'custom', message: `not allowed in a "${p.kind}" part`, path: [k] });
    }
  });

const userRole = (wanted: readonly unknown[], name: string) =>
  z.unknown().superRefine((r, ctx) => {
    if (!wanted.includes(r)) ctx.addIssue({ code: 'custom', message: `must be ${name} (callers send user messages; got ${describe(r)})` });
  });

const parts = <T extends z.ZodType>(part: T) =>
  z.array(part).min(1, 'must not be empty').max(A2A_LIMITS.parts, `must have at most ${A2A_LIMITS.parts} entries`);

const rpcMessage = z
  .object({
    kind: z.enum(['message'], 'must be "message"').optional(),
    messageId: id,
    contextId: id.optional(),
    taskId: id.optional(),
    role: userRole(['user'], '"user"'),
    parts: parts(rpcPart),
    metadata: struct.optional(),
    extensions: list(short()).optional(),
    referenceTaskIds: list(id).optional(),
  })
  .strict()
  .superRefine((m, ctx) => checkDeadline(m.metadata, ctx));

/** A push config as both 0.3 bindings carry it. */
const pushConfig = z
  .object({
    id: id.optional(),
    url: httpUrl,
    token: headerValue.optional(),
    authentication: z
      .object({ schemes: list(authScheme).min(1, 'must not be empty'), credentials: headerValue.optional() })
      .strict()
      .optional(),
  })
  .strict();

const metadata = { metadata: struct.optional() };

/** The params of each 0.3 JSON-RPC method the compatibility layer serves (`message/stream` takes `message/send`'s). */
export const LEGACY_PARAMS = {
  'message/send': z
    .object({
      message: rpcMessage,
      configuration: z
        .object({
          acceptedOutputModes: list(short()).optional(),
          blocking: z.boolean().optional(),
          historyLength: historyLength.optional(),
          pushNotificationConfig: pushConfig.optional(),
        })
        .strict()
        .optional(),
      ...metadata,
    })
    .strict(),
  'tasks/get': z.object({ id, historyLength: historyLength.optional(), ...metadata }).strict(),
  'tasks/cancel': z.object({ id, ...metadata }).strict(),
  'tasks/resubscribe': z.object({ id, ...metadata }).strict(),
  'tasks/pushNotificationConfig/set': z.object({ taskId: id, pushNotificationConfig: pushConfig }).strict(),
  'tasks/pushNotificationConfig/get': z.object({ id, pushNotificationConfigId: id.optional(), ...metadata }).strict(),
  'tasks/pushNotificationConfig/list': z.object({ id, ...metadata }).strict(),
  'tasks/pushNotificationConfig/delete': z.object({ id, pushNotificationConfigId: id, ...metadata }).strict(),
} as const;

// --- HTTP+JSON (proto3 JSON of the 0.3 proto) ---

const restPart = z
  .object({
    text: text().optional(),
    file: z
      .object({
        fileWithUri: short().min(1, 'must not be empty').optional(),
        fileWithBytes: z.string().regex(BASE64, 'must be base64').optional(),
        mimeType: short().optional(),
      })
      .strict()
      .superRefine((f, ctx) => {
        if ((f.fileWithUri === undefined) === (f.fileWithBytes === undefined)) {
          ctx.addIssue({ code: 'custom', message: 'must have exactly one of fileWithUri or fileWithBytes' });
        }
      })
      .optional(),
    data: z.object({ data: jsonObject }).strict().optional(),
    metadata: struct.optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    const given = (['text', 'file', 'data'] as const).filter((k) => p[k] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `must have exactly one content field (text, file or data); ${given.length ? `got ${given.join(', ')}` : 'got none'}`,
      });
    }
  });

const restMessage = z
  .object({
    messageId: id,
    contextId: id.optional(),
    taskId: id.optional(),
    role: userRole(['ROLE_USER', 1], '"ROLE_USER"'),
    content: parts(restPart),
    metadata: struct.optional(),
    extensions: list(short()).optional(),
  })
  .strict()
  .superRefine((m, ctx) => checkDeadline(m.metadata, ctx));

/** The bodies of the 0.3 HTTP+JSON routes that take one. */
export const LEGACY_BODIES = {
  send: z
    .object({
      message: restMessage,
      configuration: z
        .object({
          acceptedOutputModes: list(short()).optional(),
          pushNotification: pushConfig.optional(),
          historyLength: historyLength.optional(),
          blocking: z.boolean().optional(),
        })
        .strict()
        .optional(),
      ...metadata,
    })
    .strict(),
  pushConfig: z.object({ name: short().optional(), pushNotificationConfig: pushConfig }).strict(),
} as const;
