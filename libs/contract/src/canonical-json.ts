import { createHash } from 'node:crypto';
import canonicalizeCjs from 'canonicalize';
import { MeshError } from './errors.js';

// The package is CommonJS (`module.exports = fn`) but its typings declare an ES default export:
// under NodeNext the default import is the function at run time, so only the type is corrected.
const canonicalize = canonicalizeCjs as unknown as (input: unknown) => string | undefined;

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
