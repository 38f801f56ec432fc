// The Go template builtins and the Sprig/Helm functions the chart uses, with their Go semantics
// (Sprig's int64 arithmetic, `default` on empty values, `quote` of %v, Helm's toYaml with sorted
// keys and no trailing newline). A template calling a function missing here fails to render.
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { formatFloat, isMap, kindOf, printValue, TemplateError, truthy, type GoFunction, type GoMap, type GoValue } from './go-template.js';

/** Helm's `fail`: the render stops with this message. */
export class RenderFailure extends TemplateError {
  override name = 'RenderFailure';
}

/** Sprig's strval: strings as they are, everything else as fmt's %v. */
const strval = (v: GoValue): string => (typeof v === 'string' ? v : printValue(v));

/** Sprig's `empty`. */
const empty = (v: GoValue): boolean => !truthy(v);

/** cast.ToInt64 as Sprig's `int` uses it: floats truncate, numeric strings parse, anything else is 0. */
function toInt64(v: GoValue): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string') {
    const s = v.replace(/\.0*$/, '');
    return /^[+-]?(0x[0-9a-fA-F]+|[0-9]+)$/.test(s) ? BigInt(s) : 0n;
  }
  return 0n;
}

/** Go's `%q`: a double-quoted string with Go escapes (JSON's are the same for what charts hold). */
const goQuote = (s: string): string => JSON.stringify(s).replace(/\\u007f/g, '\\x7f');

/** fmt.Sprintf for the verbs charts use: %s %d %v %q %%. */
function sprintf(format: string, args: GoValue[]): string {
  let i = 0;
  return format.replace(/%([%sdvq])/g, (_m, verb: string) => {
    if (verb === '%') return '%';
    const a = args[i++];
    if (a === undefined && i > args.length) return `%!${verb}(MISSING)`;
    switch (verb) {
      case 'd':
        if (typeof a !== 'bigint') throw new TemplateError(`printf %d of a ${kindOf(a)} prints %!d(${kindOf(a)}=${strval(a)}) in Go; convert with int`);
        return a.toString();
      case 'q':
        return goQuote(strval(a));
      default:
        return strval(a);
    }
  });
}

/** Recursively copies a value for YAML output: ints as numbers, map keys sorted (Go's JSON marshal). */
function plain(v: GoValue): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(plain);
  if (isMap(v)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = plain(v[k]);
    return out;
  }
  return v ?? null;
}

/** Helm's toYaml: YAML of the value without the trailing newline, quoting YAML 1.1 booleans like yes/on as Go's yaml does. */
function toYaml(v: GoValue): string {
  return stringify(plain(v), { lineWidth: 0, version: '1.1' }).replace(/\n$/, '');
}

/** Go's basic-kind comparison: ints with ints, floats with floats, strings with strings. */
function compare(a: GoValue, b: GoValue, op: string): number {
  if (typeof a !== typeof b || !['bigint', 'number', 'string'].includes(typeof a)) {
    throw new TemplateError(`error calling ${op}: incompatible types for comparison (${kindOf(a)} and ${kindOf(b)})`);
  }
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

function eq(a: GoValue, ...rest: GoValue[]): boolean {
  for (const b of rest) {
    if (a === null || a === undefined || b === null || b === undefined) {
      if ((a ?? null) === (b ?? null)) return true;
      continue;
    }
    if (typeof a !== typeof b) throw new TemplateError(`error calling eq: incompatible types for comparison (${kindOf(a)} and ${kindOf(b)})`);
    if (typeof a === 'object') throw new TemplateError('error calling eq: non-comparable type');
    if (a === b) return true;
  }
  return false;
}

const intArgs = (args: GoValue[]) => args.map(toInt64);

/** Builtins of text/template plus the Sprig and Helm functions the chart uses. */
export const sprigFunctions: Record<string, GoFunction> = {
  // text/template builtins
  and: () => null, // short-circuited by the executor
  or: () => null,
  not: (v) => !truthy(v),
  eq: (a, ...rest) => eq(a, ...rest),
  ne: (a, b) => !eq(a, b),
  lt: (a, b) => compare(a, b, 'lt') < 0,
  le: (a, b) => compare(a, b, 'le') <= 0,
  gt: (a, b) => compare(a, b, 'gt') > 0,
  ge: (a, b) => compare(a, b, 'ge') >= 0,
  len: (v) => {
    if (typeof v === 'string' || Array.isArray(v)) return BigInt(v.length);
    if (isMap(v)) return BigInt(Object.keys(v).length);
    throw new TemplateError(`len of type ${kindOf(v)}`);
  },
  index: (v, ...keys) =>
    keys.reduce<GoValue>((cur, k) => {
      if (Array.isArray(cur)) {
        const i = Number(toInt64(k));
        if (i < 0 || i >= cur.length) throw new TemplateError(`index out of range: ${i}`);
        return cur[i];
      }
      if (isMap(cur)) return Object.hasOwn(cur, strval(k)) ? cur[strval(k)] : null;
      if (cur === null || cur === undefined) throw new TemplateError('index of untyped nil');
      throw new TemplateError(`can't index item of type ${kindOf(cur)}`);
    }, v),
  print: (...args) => args.map((a, i) => (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string' ? ' ' : '') + strval(a)).join(''),
  printf: (format, ...args) => sprintf(strval(format), args),
  // Sprig: strings
  default: (d, v) => (empty(v) ? d : v),
  empty: (v) => empty(v),
  required: (msg, v) => {
    if (v === null || v === undefined || v === '') throw new RenderFailure(strval(msg));
    return v;
  },
  fail: (msg) => {
    throw new RenderFailure(strval(msg));
  },
  quote: (...args) =>
    args
      .filter((a) => a !== null && a !== undefined)
      .map((a) => goQuote(strval(a)))
      .join(' '),
  toString: (v: GoValue) => strval(v),
  trunc: (n, s) => {
    const str = strval(s);
    const c = Number(toInt64(n));
    return c < 0 ? str.slice(Math.max(0, str.length + c)) : str.slice(0, c);
  },
  trimSuffix: (suffix, s) => (strval(s).endsWith(strval(suffix)) ? strval(s).slice(0, strval(s).length - strval(suffix).length) : strval(s)),
  contains: (sub, s) => strval(s).includes(strval(sub)),
  replace: (from, to, s) => strval(s).split(strval(from)).join(strval(to)),
  upper: (s) => strval(s).toUpperCase(),
  lower: (s) => strval(s).toLowerCase(),
  join: (sep, v) => (Array.isArray(v) ? v : [v]).filter((x) => x !== null && x !== undefined).map(strval).join(strval(sep)),
  indent: (n, s) => {
    const pad = ' '.repeat(Number(toInt64(n)));
    return pad + strval(s).replace(/\n/g, `\n${pad}`);
  },
  nindent: (n, s) => {
    const pad = ' '.repeat(Number(toInt64(n)));
    return `\n${pad}${strval(s).replace(/\n/g, `\n${pad}`)}`;
  },
  b64enc: (s) => Buffer.from(strval(s), 'utf8').toString('base64'),
  sha256sum: (s) => createHash('sha256').update(strval(s)).digest('hex'),
  // Sprig: integer math (int64, like Sprig)
  int: (v) => toInt64(v),
  int64: (v) => toInt64(v),
  add: (...args) => intArgs(args).reduce((a, b) => a + b, 0n),
  mul: (...args) => intArgs(args).reduce((a, b) => a * b, 1n),
  sub: (a, b) => toInt64(a) - toInt64(b),
  div: (a, b) => toInt64(a) / toInt64(b),
  min: (...args) => intArgs(args).reduce((a, b) => (b < a ? b : a)),
  max: (...args) => intArgs(args).reduce((a, b) => (b > a ? b : a)),
  // Sprig: types, dicts and lists
  kindIs: (kind, v) => strval(kind) === kindOf(v),
  kindOf: (v) => kindOf(v),
  dict: (...kv) => {
    const out: GoMap = {};
    for (let i = 0; i < kv.length; i += 2) out[strval(kv[i])] = kv[i + 1] ?? null;
    return out;
  },
  set: (d, k, v) => {
    if (!isMap(d)) throw new TemplateError(`set on ${kindOf(d)}`);
    d[strval(k)] = v;
    return d;
  },
  hasKey: (d, k) => isMap(d) && Object.hasOwn(d, strval(k)),
  list: (...items) => items,
  append: (l, v) => {
    if (!Array.isArray(l)) throw new TemplateError(`cannot append to ${kindOf(l)}`);
    return [...l, v];
  },
  // Helm
  toYaml: (v) => toYaml(v),
  toJson: (v) => JSON.stringify(plain(v)),
};

export { formatFloat };
