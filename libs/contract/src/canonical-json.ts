import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { MeshError } from './errors.js';

// canonicalize 2.x is CommonJS (`module.exports = serialize`) but its typings declare an ES default
// export, so under NodeNext the default import is typed as the namespace; at runtime it is the function.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/** RFC 8785 (JCS) canonical form of a JSON value. Throws on values JSON cannot represent. */
export function canonicalJson(value: unknown): string {
  let out: string | undefined;
  try {
    out = canonicalize(value);
  } catch (cause) {
    throw new MeshError('CONTRACT_VIOLATION', 'value has no canonical JSON form', { cause });
  }
  if (out === undefined) {
    throw new MeshError('CONTRACT_VIOLATION', 'value has no canonical JSON form');
  }
  return out;
}

/** Hex SHA-256 of the canonical JSON of tool arguments: equal arguments in any key order hash alike. */
export function argsHash(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(args ?? {}), 'utf8')
    .digest('hex');
}
