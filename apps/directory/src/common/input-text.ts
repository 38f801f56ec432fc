import { hasControlCharacter, hasLoneSurrogate } from '@mesh/contract';
import { fieldPath } from './field-path.js';
import type { FieldError } from './directory.exception.js';

/** Deepest nesting a request body may have (the card schema needs 5; records inside it get the rest). */
export const MAX_BODY_DEPTH = 32;

/**
 * Why `s` is refused, or undefined when it is clean. Postgres refuses NUL in text and jsonb (a 500
 * after side effects) and cannot store lone surrogates; other controls are never part of a name,
 * id, media type or description a caller could mean. Free text may keep TAB, LF and CR.
 */
export function badText(s: string, opts: { allowLineBreaks?: boolean } = {}): string | undefined {
  if (hasControlCharacter(s, opts)) return 'contains a control character';
  if (hasLoneSurrogate(s)) return 'contains a lone surrogate (not well-formed Unicode)';
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
