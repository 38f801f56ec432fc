import type { z } from 'zod';
import { fc } from './fuzz-support.js';

/** One field of a request shape, found by walking its zod schema. */
export interface SchemaField {
  /** Keys and indexes from the root (`['card', 'skills', 0, 'tags', 0]`); arrays are entered at index 0, records at key `k`. */
  path: Array<string | number>;
  /** What the schema wants there ('unknown': any JSON value is valid). */
  kind: 'string' | 'number' | 'boolean' | 'enum' | 'object' | 'array' | 'record' | 'unknown';
  /** Objects only: unknown keys are refused (strict) rather than dropped. */
  strict?: boolean;
  /** Enums only: the values the schema accepts. */
  options?: string[];
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  catchall?: z.ZodType;
  entries?: Record<string, string | number>;
}

const defOf = (s: z.ZodType) => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Every field of a zod schema (containers included), depth first. */
export function schemaFields(schema: z.ZodType, path: Array<string | number> = [], out: SchemaField[] = []): SchemaField[] {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
    case 'default':
    case 'nullable':
    case 'prefault':
      return schemaFields(def.innerType!, path, out);
    case 'pipe':
      return schemaFields(def.in!, path, out);
    case 'object':
      if (path.length > 0) out.push({ path, kind: 'object', strict: def.catchall !== undefined && defOf(def.catchall).type === 'never' });
      for (const [k, v] of Object.entries(def.shape!)) schemaFields(v, [...path, k], out);
      return out;
    case 'array':
      out.push({ path, kind: 'array' });
      return schemaFields(def.element!, [...path, 0], out);
    case 'record':
      out.push({ path, kind: 'record' });
      return schemaFields(def.valueType!, [...path, 'k'], out);
    case 'enum':
      out.push({ path, kind: 'enum', options: Object.values(def.entries!).map(String) });
      return out;
    case 'string':
    case 'number':
    case 'boolean':
    case 'unknown':
      out.push({ path, kind: def.type as SchemaField['kind'] });
      return out;
    default:
      throw new Error(`schemaFields: no rule for zod type "${def.type}" at ${path.join('.')}`);
  }
}

/** Sets `path` in a copy of `value`, creating the objects and arrays on the way. */
export function setPath(value: unknown, path: Array<string | number>, leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [head, ...rest] = path;
  if (typeof head === 'number') {
    const arr = Array.isArray(value) ? [...(value as unknown[])] : [];
    arr[head] = setPath(arr[head], rest, leaf);
    return arr;
  }
  const obj = typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
  obj[head] = setPath(obj[head], rest, leaf);
  return obj;
}

/** Strings no field may hold: NUL, C0 and C1 controls, DEL, lone surrogates (each class named). */
export const controlStrings = fc.oneof(
  fc.constantFrom('a\u0000b', '\u0000', 'x\u0001', '\u001b[31mred', 'del\u007f', 'c1\u0085', '\u009b2J', '\u0008'),
  fc.constantFrom('\ud800', 'x\udfff', 'a\udc00b', '\ud83d'),
  fc.tuple(fc.string({ maxLength: 20 }), fc.integer({ min: 0, max: 0x1f }), fc.string({ maxLength: 20 })).map(
    // TAB, LF and CR are allowed in body text (descriptions): never generated here.
    ([a, c, b]) => `${a}${String.fromCharCode([9, 10, 13].includes(c) ? 0 : c)}${b}`,
  ),
);

/** A string over 10 KiB. */
export const hugeString = fc.integer({ min: 10 * 1024 + 1, max: 16 * 1024 }).map((n) => 'x'.repeat(n));

/** Numeric extremes, as numbers (JSON bodies) — `-0` included. */
export const numericExtremes = fc.constantFrom(2 ** 53, -(2 ** 53), 2 ** 53 + 2, 1e308, -1e308, -0, 2 ** 31, 0.5, -1);

/** Numeric extremes as text (query and path parameters). */
export const numericText = fc.constantFrom(
  '9007199254740992',
  '-9007199254740992',
  '1e308',
  '-0',
  'NaN',
  'Infinity',
  '2147483648',
  '1e39',
  '0x10',
  ' 1',
);

/** `depth`-deep nesting of objects and arrays, kept as JSON text (serialising it recursively would overflow the stack). */
export class DeepJson {
  readonly text: string;
  constructor(readonly depth: number) {
    const half = Math.ceil(depth / 2);
    this.text = '{"n":['.repeat(half) + '"leaf"' + ']}'.repeat(half);
  }
  toJSON(): string {
    return DEEP_PLACEHOLDER;
  }
  [fc.toStringMethod](): string {
    return `<${this.depth}-deep nesting>`;
  }
}
const DEEP_PLACEHOLDER = '__deep_nesting__';

/** 40, 1,000 and 10,000 levels. */
export const deepNesting = fc.constantFrom(40, 1000, 10000).map((d) => new DeepJson(d));

/** JSON text of a body that may hold one {@link DeepJson}. */
export function bodyText(body: unknown, deep?: DeepJson): string {
  const text = JSON.stringify(body) ?? 'null';
  return deep ? text.replace(`"${DEEP_PLACEHOLDER}"`, deep.text) : text;
}

/** A value of the wrong JSON type for a field of `kind` (never one the kind accepts). */
export function wrongTypeFor(kind: SchemaField['kind']): fc.Arbitrary<unknown> {
  const all: Array<[SchemaField['kind'][], fc.Arbitrary<unknown>]> = [
    [['string', 'enum'], fc.string({ maxLength: 10 })],
    [['number'], fc.integer()],
    [['boolean'], fc.boolean()],
    [['array'], fc.array(fc.integer(), { maxLength: 2 })],
    [['object', 'record'], fc.dictionary(fc.constantFrom('a', 'b'), fc.integer(), { maxKeys: 2 })],
    [[], fc.constant(null)],
  ];
  return fc.oneof(...all.filter(([kinds]) => !kinds.includes(kind)).map(([, a]) => a));
}
