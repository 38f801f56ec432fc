import { fieldPath } from './field-path.js';
import type { FieldError } from './directory.exception.js';

/**
 * Characters no directory value may hold: NUL and the other C0 controls, DEL and the C1 controls.
 * Postgres refuses NUL in text and jsonb (a 500 after side effects), and the others are never part
 * of a name, id, media type or description a caller could mean. Free text may keep TAB, LF and CR.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/u;

/** A high surrogate not followed by a low one, or a low one without a high one before it (no `u` flag: code units). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Deepest nesting a request body may have (the card schema needs 5; records inside it get the rest). */
export const MAX_BODY_DEPTH = 32;

/** Why `s` is refused (a control character, a lone surrogate), or undefined when it is clean. */
export function badText(s: string, opts: { allowLineBreaks?: boolean } = {}): string | undefined {
  if ((opts.allowLineBreaks ? CONTROL_IN_TEXT : CONTROL).test(s)) return 'contains a control character';
  // Lone surrogates cannot be stored as UTF-8 (Postgres refuses them in jsonb).
  if (LONE_SURROGATE.test(s)) return 'contains a lone surrogate (not well-formed Unicode)';
  return undefined;
}

/**
 * Walks a parsed JSON body (iteratively: a 64 KiB body can nest 30,000 levels) and names every
 * string value or key holding a control character (TAB, LF, CR allowed in values unless
 * `allowLineBreaks` is false) or a lone surrogate, every `__proto__` key, and every container
 * nested deeper than {@link MAX_BODY_DEPTH}.
 */
export function badTextFields(
  value: unknown,
  prefix: PropertyKey[] = [],
  opts: { allowLineBreaks?: boolean; maxErrors?: number } = {},
): FieldError[] {
  const maxErrors = opts.maxErrors ?? 20;
  const out: FieldError[] = [];
  const stack: Array<{ v: unknown; path: PropertyKey[] }> = [{ v: value, path: prefix }];
  while (stack.length > 0 && out.length < maxErrors) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      const why = badText(v, { allowLineBreaks: opts.allowLineBreaks ?? true });
      if (why) out.push({ field: fieldPath(path) || 'body', message: why });
    } else if (typeof v === 'object' && v !== null) {
      if (path.length - prefix.length >= MAX_BODY_DEPTH) {
        out.push({ field: fieldPath(path) || 'body', message: `nested deeper than ${MAX_BODY_DEPTH} levels` });
        continue;
      }
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: [...path, i] });
      } else {
        for (const [k, child] of Object.entries(v)) {
          // `__proto__` is not a key a parsed object keeps: copying it (zod records, the SDK) sets a
          // prototype instead, so the entry would vanish without a word.
          const why = k === '__proto__' ? 'is reserved' : badText(k);
          if (why) out.push({ field: fieldPath([...path, safeKey(k)]), message: `key ${why}` });
          else stack.push({ v: child, path: [...path, k] });
        }
      }
    }
  }
  return out;
}

/** A key shown in an error message with its bad characters escaped, so the answer stays printable. */
export function safeKey(k: string): string {
  return JSON.stringify(k.slice(0, 64)).slice(1, -1);
}
