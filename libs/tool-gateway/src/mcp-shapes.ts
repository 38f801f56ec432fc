import { isJsonObject, type JsonObject } from '@mesh/contract';

/** A content block of a tool result (text, image, audio, resource link, embedded resource). */
export type ToolContent = { type: string; text?: string } & JsonObject;

/**
 * A tool result in the one shape the gateway hands on, whichever protocol revision the server
 * speaks: the 2026-07-28 revision's extra fields (`resultType`, `ttlMs`, `cacheScope`, `_meta`)
 * are dropped, and `isError` is present only when true.
 */
export interface ToolCallResult {
  content: ToolContent[];
  /** Only an object: a newer server's non-object structured content is wrapped as `{ value }`. */
  structuredContent?: JsonObject;
  isError?: true;
}

/** Narrows a tool result of either revision to {@link ToolCallResult}. */
export function normaliseCallResult(result: { content?: unknown; structuredContent?: unknown; isError?: unknown }): ToolCallResult {
  const content = Array.isArray(result.content) ? (result.content as ToolContent[]) : [];
  const structured = result.structuredContent;
  return {
    content,
    // 2026-07-28 allows any JSON value here; the ledger and agents keep an object.
    ...(structured === undefined || structured === null
      ? {}
      : { structuredContent: isJsonObject(structured) ? structured : { value: structured } }),
    ...(result.isError === true ? { isError: true as const } : {}),
  };
}

const DRAFT_2020_12 = /json-schema\.org\/draft\/2020-12\/schema/;

/**
 * An input schema in the one dialect agents see: JSON Schema draft-07 without `$schema`, which is
 * what the 2025 revision's servers send and what model APIs accept. 2026-07-28 servers send
 * 2020-12 (`$defs`, `prefixItems`); those keywords are mapped to their draft-07 forms.
 */
export function normaliseInputSchema(schema: unknown): JsonObject {
  if (!isJsonObject(schema)) return { type: 'object' };
  const dialect2020 =
    typeof schema.$schema === 'string' ? DRAFT_2020_12.test(schema.$schema) : hasKeyword(schema, ['$defs', 'prefixItems']);
  const { $schema: _dialect, ...rest } = schema;
  return (dialect2020 ? toDraft07(rest) : rest) as JsonObject;
}

function toDraft07(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toDraft07);
  if (!isJsonObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$defs') out.definitions = toDraft07(v);
    else if (k === '$ref' && typeof v === 'string') out.$ref = v.replace(/^#\/\$defs\//, '#/definitions/');
    else if (k === 'prefixItems') out.items = toDraft07(v);
    // With prefixItems, 2020-12 `items` means what draft-07 calls `additionalItems`.
    else if (k === 'items' && 'prefixItems' in node) out.additionalItems = toDraft07(v);
    else out[k] = toDraft07(v);
  }
  return out;
}

function hasKeyword(node: unknown, keys: string[]): boolean {
  if (Array.isArray(node)) return node.some((n) => hasKeyword(n, keys));
  if (!isJsonObject(node)) return false;
  return Object.entries(node).some(([k, v]) => keys.includes(k) || hasKeyword(v, keys));
}
