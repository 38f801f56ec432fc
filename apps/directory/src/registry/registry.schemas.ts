import { z } from 'zod';
import { ChannelKey, isAgentId, MeshError } from '@mesh/contract';
import { DirectoryError, type FieldError } from '../common/directory.exception.js';
import { fieldPath } from '../common/field-path.js';
import { badText, badTextFields } from '../common/input-text.js';

export { fieldPath };

// No trimming: the stored card must stay byte-for-byte what a signature covers.
/** Free text (descriptions, examples): TAB, CR and LF allowed (other controls are refused for the whole body). */
const text = (max: number) =>
  z
    .string()
    .max(max, `at most ${max} characters`)
    .refine((s) => s.trim().length > 0, 'required, non-empty');
/** A name, id, tag, version or media type: one line, so no TAB, CR or LF either (they end up in logs and headers). */
const line = (max: number) =>
  text(max).refine((s) => badText(s, { allowLineBreaks: false }) === undefined, 'must be a single line (no TAB, CR or LF)');
/** An optional single-line value that may be empty (A2A leaves these blank when unused). */
const optionalLine = (max: number) =>
  z
    .string()
    .max(max, `at most ${max} characters`)
    .refine((s) => badText(s, { allowLineBreaks: false }) === undefined, 'must be a single line (no TAB, CR or LF)')
    .optional();
const description = z.string().max(4000, 'at most 4000 characters').optional();

/**
 * An absolute http(s) URL, as written: the WHATWG parser forgives what a stored URL must not hold
 * (it drops TAB, CR and LF, trims spaces, accepts `https:host`), so those are refused before it runs.
 * Credentials (`user:pass@`) never belong in a card others read.
 */
const httpUrl = z
  .string()
  .max(2048, 'at most 2048 characters')
  .superRefine((s, ctx) => {
    const issue = (message: string) => ctx.addIssue({ code: 'custom', message });
    if (/[\s\p{Cc}]/u.test(s)) return issue('expected an absolute http(s) URL without whitespace or control characters');
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      return issue('expected an absolute http(s) URL');
    }
    if (!/^https?:\/\//i.test(s) || (u.protocol !== 'https:' && u.protocol !== 'http:')) return issue('expected an absolute http(s) URL');
    if (u.username || u.password) issue('must not carry credentials (user:password@)');
  });
const mediaTypes = z.array(line(200)).min(1, 'at least one media type').max(50);

/** An object holding exactly one of its (optional) members: a protobuf `oneof` in A2A's JSON. */
function oneOf<T extends Record<string, z.ZodType>>(shape: T) {
  const keys = Object.keys(shape);
  return z.object(shape).superRefine((v, ctx) => {
    const set = keys.filter((k) => (v as Record<string, unknown>)[k] !== undefined);
    if (set.length !== 1) ctx.addIssue({ code: 'custom', message: `exactly one of ${keys.join(', ')}` });
  });
}

/**
 * OAuth scopes: scope → description. Optional: proto3's JSON leaves an empty map out, so the card the
 * directory stores and serves has none where none were given, and must be accepted back as it is.
 */
const scopes = z
  .record(z.string().max(200), z.string().max(1000))
  .refine((m) => Object.keys(m).length <= 100, 'at most 100 scopes')
  .optional();
/** A2A 1.0 OAuthFlows (the deprecated implicit and password flows included: older cards carry them). */
const oauthFlows = oneOf({
  authorizationCode: z
    .object({ authorizationUrl: httpUrl, tokenUrl: httpUrl, refreshUrl: httpUrl.optional(), scopes, pkceRequired: z.boolean().optional() })
    .optional(),
  clientCredentials: z.object({ tokenUrl: httpUrl, refreshUrl: httpUrl.optional(), scopes }).optional(),
  deviceCode: z.object({ deviceAuthorizationUrl: httpUrl, tokenUrl: httpUrl, refreshUrl: httpUrl.optional(), scopes }).optional(),
  implicit: z.object({ authorizationUrl: httpUrl, refreshUrl: httpUrl.optional(), scopes }).optional(),
  password: z.object({ tokenUrl: httpUrl, refreshUrl: httpUrl.optional(), scopes }).optional(),
});

/** A2A 1.0 SecurityScheme: exactly one kind, each with its required members. */
const securitySchemeSchema = oneOf({
  apiKeySecurityScheme: z.object({ location: z.enum(['query', 'header', 'cookie']), name: line(200), description }).optional(),
  httpAuthSecurityScheme: z.object({ scheme: line(100), bearerFormat: optionalLine(100), description }).optional(),
  oauth2SecurityScheme: z.object({ flows: oauthFlows, oauth2MetadataUrl: httpUrl.optional(), description }).optional(),
  openIdConnectSecurityScheme: z.object({ openIdConnectUrl: httpUrl, description }).optional(),
  mtlsSecurityScheme: z.object({ description }).optional(),
});

/** A2A 1.0 SecurityRequirement: scheme name → the scopes it needs (an empty map is left out, as with scopes). */
const securityRequirementSchema = z.object({
  schemes: z.record(z.string().max(200), z.object({ list: z.array(line(200)).max(50).optional() })).optional(),
});
const securityRequirements = z.array(securityRequirementSchema).max(20).optional();

/** A2A 1.0 AgentSkill: id, name, description and tags are required. */
const skillSchema = z.object({
  id: line(200),
  name: line(200),
  description: text(4000),
  tags: z.array(line(100)).min(1, 'at least one tag').max(50),
  examples: z.array(text(2000)).max(50).optional(),
  inputModes: z.array(line(200)).max(50).optional(),
  outputModes: z.array(line(200)).max(50).optional(),
  securityRequirements,
});

const interfaceSchema = z.object({
  url: httpUrl,
  protocolBinding: line(50),
  protocolVersion: z.string().regex(/^\d+\.\d+$/, 'expected "major.minor", e.g. "1.0"'),
  tenant: optionalLine(200),
});

/**
 * The A2A 1.0 AgentCard shape the directory accepts. Fields outside the v1.0 schema are dropped on
 * storage (the SDK's AgentCard.fromJSON/toJSON), which is also exactly what a card signature covers.
 */
export const agentCardSchema = z
  .object({
    name: line(200),
    description: text(4000),
    version: line(100),
    capabilities: z.object({
      streaming: z.boolean().optional(),
      pushNotifications: z.boolean().optional(),
      extendedAgentCard: z.boolean().optional(),
      extensions: z
        .array(
          z.object({
            uri: line(2048),
            description,
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
    provider: z.object({ url: httpUrl, organization: line(200) }).optional(),
    documentationUrl: httpUrl.optional(),
    iconUrl: httpUrl.optional(),
    securitySchemes: z
      .record(z.string().max(200), securitySchemeSchema)
      .refine((m) => Object.keys(m).length <= 20, 'at most 20 security schemes')
      .optional(),
    securityRequirements,
    signatures: z
      .array(z.object({ protected: line(8192), signature: line(8192), header: z.record(z.string(), z.unknown()).optional() }))
      .max(10)
      .optional(),
  })
  .superRefine((card, ctx) => {
    // A requirement names schemes the card declares (A2A: each key must match a security scheme).
    const declared = new Set(Object.keys(card.securitySchemes ?? {}));
    const check = (reqs: Array<{ schemes?: Record<string, unknown> }> | undefined, at: PropertyKey[]) =>
      reqs?.forEach((r, i) => {
        for (const name of Object.keys(r.schemes ?? {}))
          if (!declared.has(name))
            ctx.addIssue({
              code: 'custom',
              path: [...at, i, 'schemes', name],
              message: `no security scheme "${name}" in card.securitySchemes`,
            });
      });
    check(card.securityRequirements, ['securityRequirements']);
    card.skills.forEach((s, i) => check(s.securityRequirements, ['skills', i, 'securityRequirements']));
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
      workerId: optionalLine(200),
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
