import { z } from 'zod';
import { ChannelKey, isAgentId, MeshError } from '@mesh/contract';
import { DirectoryError, type FieldError } from '../common/directory.exception.js';
import { fieldPath } from '../common/field-path.js';
import { badTextFields } from '../common/input-text.js';

export { fieldPath };

// No trimming: the stored card must stay byte-for-byte what a signature covers.
const text = (max: number) =>
  z
    .string()
    .max(max, `at most ${max} characters`)
    .refine((s) => s.trim().length > 0, 'required, non-empty');
const httpUrl = z
  .string()
  .max(2048)
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === 'https:' || u.protocol === 'http:';
    } catch {
      return false;
    }
  }, 'expected an absolute http(s) URL');
const mediaTypes = z.array(text(200)).min(1, 'at least one media type').max(50);

/** A2A 1.0 AgentSkill: id, name, description and tags are required. */
const skillSchema = z.object({
  id: text(200),
  name: text(200),
  description: text(4000),
  tags: z.array(text(100)).min(1, 'at least one tag').max(50),
  examples: z.array(text(2000)).max(50).optional(),
  inputModes: z.array(text(200)).max(50).optional(),
  outputModes: z.array(text(200)).max(50).optional(),
  securityRequirements: z.array(z.record(z.string(), z.unknown())).optional(),
});

const interfaceSchema = z.object({
  url: httpUrl,
  protocolBinding: text(50),
  protocolVersion: z.string().regex(/^\d+\.\d+$/, 'expected "major.minor", e.g. "1.0"'),
  tenant: z.string().max(200).optional(),
});

/**
 * The A2A 1.0 AgentCard shape the directory accepts. Fields outside the v1.0 schema are dropped on
 * storage (the SDK's AgentCard.fromJSON/toJSON), which is also exactly what a card signature covers.
 */
export const agentCardSchema = z.object({
  name: text(200),
  description: text(4000),
  version: text(100),
  capabilities: z.object({
    streaming: z.boolean().optional(),
    pushNotifications: z.boolean().optional(),
    extendedAgentCard: z.boolean().optional(),
    extensions: z
      .array(
        z.object({
          uri: text(2048),
          description: z.string().max(4000).optional(),
          required: z.boolean().optional(),
          params: z.record(z.string(), z.unknown()).optional(),
        }),
      )
      .optional(),
  }),
  defaultInputModes: mediaTypes,
  defaultOutputModes: mediaTypes,
  skills: z
    .array(skillSchema)
    .min(1, 'at least one skill')
    .max(100)
    .superRefine((skills, ctx) => {
      const seen = new Set<string>();
      skills.forEach((s, i) => {
        if (seen.has(s.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate skill id "${s.id}"` });
        seen.add(s.id);
      });
    }),
  supportedInterfaces: z.array(interfaceSchema).max(20).optional(),
  provider: z.object({ url: httpUrl, organization: text(200) }).optional(),
  documentationUrl: httpUrl.optional(),
  iconUrl: httpUrl.optional(),
  securitySchemes: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  securityRequirements: z.array(z.record(z.string(), z.unknown())).optional(),
  signatures: z
    .array(z.object({ protected: text(8192), signature: text(8192), header: z.record(z.string(), z.unknown()).optional() }))
    .max(10)
    .optional(),
});

const visibilitySchema = z.enum(['private', 'tenant', 'public']);

function channelSchema(maxPartitions: number) {
  return z.strictObject({
    keyTemplate: z
      .string()
      .optional()
      .superRefine((t, ctx) => {
        if (t === undefined) return;
        try {
          ChannelKey.parse(t);
        } catch (e) {
          ctx.addIssue({ code: 'custom', message: e instanceof MeshError ? e.message : String(e) });
        }
      }),
    partitions: z.number().int('expected an integer').min(1).max(maxPartitions, `at most ${maxPartitions}`).optional(),
  });
}

/** Request body schemas; `maxPartitions` comes from config. */
export function registrySchemas(maxPartitions: number) {
  const channel = channelSchema(maxPartitions);
  return {
    register: z.strictObject({
      id: z.string().refine(isAgentId, 'expected a slug: lower-case letters, digits and dashes, at most 63 characters').optional(),
      card: agentCardSchema,
      channel: channel.optional(),
      visibility: visibilitySchema.optional(),
    }),
    update: z.strictObject({ card: agentCardSchema, channel: channel.optional(), visibility: visibilitySchema.optional() }),
    heartbeat: z.strictObject({
      ttlMs: z.number().int().min(1000).max(3_600_000).optional(),
      workerId: z.string().max(200).optional(),
    }),
  };
}

export type RegisterBody = z.output<ReturnType<typeof registrySchemas>['register']>;
export type UpdateBody = z.output<ReturnType<typeof registrySchemas>['update']>;
export type HeartbeatBody = z.output<ReturnType<typeof registrySchemas>['heartbeat']>;

/** zod issues → one FieldError per offending field (unknown keys each get their own entry). */
export function fieldErrors(error: z.ZodError, prefix: PropertyKey[] = []): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) out.push({ field: fieldPath([...path, k]), message: 'unknown field' });
    } else {
      out.push({ field: fieldPath(path) || 'body', message: issue.message });
    }
  }
  return out;
}

/**
 * Parses or throws VALIDATION_FAILED naming each offending field. Every string and key is checked
 * first (control characters, lone surrogates, nesting depth: see `badTextFields`), so nothing that
 * Postgres or Kafka would refuse later gets past the boundary.
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  opts: { prefix?: PropertyKey[]; allowLineBreaks?: boolean } = {},
): z.output<S> {
  const prefix = opts.prefix ?? [];
  const bad = badTextFields(value, prefix, { allowLineBreaks: opts.allowLineBreaks ?? true });
  if (bad.length > 0) throw new DirectoryError('VALIDATION_FAILED', `invalid ${what}: ${bad.map((f) => f.field).join(', ')}`, bad);
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  const fields = fieldErrors(r.error, prefix);
  throw new DirectoryError('VALIDATION_FAILED', `invalid ${what}: ${fields.map((f) => f.field).join(', ')}`, fields);
}
