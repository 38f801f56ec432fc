// Go values as the chart test's template interpreter models them, and fmt's printing of them.

/** Go values: int64 is a bigint, float64 a number (Helm parses values into float64), maps are objects. */
export type GoValue = null | undefined | boolean | number | bigint | string | GoValue[] | GoMap;
export interface GoMap {
  [key: string]: GoValue;
}
export type GoFunction = (...args: GoValue[]) => GoValue;

/** A template error with the template name, like Go's `template: name:line: ...`. */
export class TemplateError extends Error {
  override name = 'TemplateError';
}

/** Go's truth: false, 0, nil, empty string, empty slice or map are false. */
export function truthy(v: GoValue): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'string') return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  return Object.keys(v).length > 0;
}

export const isMap = (v: GoValue): v is GoMap => typeof v === 'object' && v !== null && !Array.isArray(v);

/** strconv.FormatFloat(f, 'g', -1, 64): what `%v` prints for a float64 (1e+06 for a million). */
export function formatFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expStr] = f.toExponential().split('e');
  const exp = Number(expStr);
  const digits = mant.replace('-', '').replace('.', '');
  let eprec = 6;
  if (eprec > digits.length && digits.length >= exp + 1) eprec = digits.length;
  if (exp < -4 || exp >= eprec) {
    const e = Math.abs(exp);
    return `${mant}e${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  }
  return String(f);
}

/** fmt's `%v`. */
export function printValue(v: GoValue): string {
  if (v === null || v === undefined) return '<no value>';
  if (typeof v === 'number') return formatFloat(v);
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return `[${v.map(printValue).join(' ')}]`;
  return `map[${Object.keys(v)
    .sort()
    .map((k) => `${k}:${printValue(v[k])}`)
    .join(' ')}]`;
}

/** A field of a map; nil fails like Go's "nil pointer evaluating". */
export function field(v: GoValue, name: string, where: string): GoValue {
  if (isMap(v)) return Object.hasOwn(v, name) ? v[name] : null;
  if (v === null || v === undefined) throw new TemplateError(`template: ${where}: nil pointer evaluating interface {}.${name}`);
  throw new TemplateError(`template: ${where}: can't evaluate field ${name} in type ${kindOf(v)}`);
}

/** reflect.Kind names as Sprig's kindOf reports them. */
export function kindOf(v: GoValue): string {
  if (v === null || v === undefined) return 'invalid';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'bigint') return 'int64';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  return Array.isArray(v) ? 'slice' : 'map';
}
