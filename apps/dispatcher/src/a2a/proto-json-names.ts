import { RequestMalformedError } from '@a2a-js/sdk/errors';

/** Fields whose values are free-form JSON (google.protobuf.Struct / Value): their keys are data, never renamed. */
const FREE_FORM = new Set(['metadata', 'data', 'params']);

/**
 * Deeper than any A2A request field: a value nested further is left as it is (the schema check
 * refuses it, naming the field) and is never walked, so a hostile nesting cannot exhaust the stack.
 */
const MAX_DEPTH = 32;

const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/**
 * A request body with the proto field names (`message_id`, `task_push_notification_config`)
 * renamed to their JSON names (`messageId`, …): the ProtoJSON mapping A2A follows has parsers
 * accept both, and some clients (the A2A TCK's HTTP+JSON client) send the proto names. Free-form
 * values (metadata, data parts) are left as they are; a field given under both names is refused.
 */
export function withJsonNames(value: unknown, path: string, depth = 0): unknown {
  if (depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v, i) => {
      const r = withJsonNames(v, `${path}[${i}]`, depth + 1);
      changed ||= r !== v;
      return r;
    });
    return changed ? out : value;
  }
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const out: Record<string, unknown> = {};
  let changed = false;
  for (const [key, v] of entries) {
    const name = key.includes('_') ? camel(key) : key;
    const at = path ? `${path}.${name}` : name;
    if (name !== key) {
      changed = true;
      if (Object.hasOwn(value, name)) throw new RequestMalformedError(`${at}: given twice (as ${key} and ${name})`);
    }
    const inner = FREE_FORM.has(name) ? v : withJsonNames(v, at, depth + 1);
    changed ||= inner !== v;
    out[name] = inner;
  }
  return changed ? out : value;
}
