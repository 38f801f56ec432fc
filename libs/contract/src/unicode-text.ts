/**
 * Character rules every edge shares: what Postgres `text`/`jsonb` cannot hold and what no
 * identifier may contain. Each edge words its own refusal; the predicates are one.
 */

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_BUT_LINE_BREAKS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
/** A high surrogate not followed by a low one, or a low one without a high one before it (code units). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `s` holds a C0 control, DEL or a C1 control (TAB, LF and CR allowed with `allowLineBreaks`). */
export function hasControlCharacter(s: string, opts: { allowLineBreaks?: boolean } = {}): boolean {
  return (opts.allowLineBreaks ? CONTROL_BUT_LINE_BREAKS : CONTROL).test(s);
}

/** True when `s` is not well-formed Unicode: an unpaired surrogate, which no UTF-8 form can carry. */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}
