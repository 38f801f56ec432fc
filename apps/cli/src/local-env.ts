// The local platform's settings file: `npm start` writes it, `mesh` and its console read it, and a
// second local process (another worker, a script) sources it. It holds secrets, so only its owner
// may read it.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { CliError } from './cli-error.js';

/** The secrets generated on the first `npm start` and kept in the file for every later one. */
export const LOCAL_SECRETS = ['AGENTS_OPS_TOKEN'] as const;
export type LocalSecrets = Record<(typeof LOCAL_SECRETS)[number], string>;

/** `MESH_LOCAL_ENV`, else `.mesh/local.env` in the checkout this module was built in (ignored by git). */
export function localEnvPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.MESH_LOCAL_ENV || fileURLToPath(new URL('../../../.mesh/local.env', import.meta.url));
}

/**
 * The file's variables; undefined when there is none. A file other users may read or write is
 * refused (CliError naming it and the fix): its tokens would be theirs too, or theirs to replace.
 */
export function readLocalEnv(path: string): Record<string, string> | undefined {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if ((mode & 0o077) !== 0)
    throw new CliError(
      `${path} is open to other users (mode ${(mode & 0o777).toString(8)}): it holds the ops token; run \`chmod 600 ${path}\` or delete it and run npm start again`,
    );
  return { ...parseEnv(readFileSync(path, 'utf8')) } as Record<string, string>;
}

/**
 * The secrets of this start: each from `given` (the environment wins), else the one the file
 * kept, else a new random one — so a restart keeps the tokens the CLI and other workers hold.
 */
export function localSecrets(kept: Record<string, string> | undefined, given: NodeJS.ProcessEnv): LocalSecrets {
  const pick = (name: (typeof LOCAL_SECRETS)[number]) => given[name] || kept?.[name] || randomBytes(24).toString('base64url');
  return { AGENTS_OPS_TOKEN: pick('AGENTS_OPS_TOKEN') };
}

/** A value as a dotenv and POSIX shell line both read it back: bare when plain, else single-quoted. */
export function quoted(name: string, value: string): string {
  if (/^[\w./:@,+=-]*$/.test(value)) return value;
  if (/['\n\r]/.test(value))
    throw new CliError(`${name}: a value with a single quote or line break cannot be written to the local env file`);
  return `'${value}'`;
}

/**
 * Writes `vars` to `path` with mode 0600 (its directory 0700), replacing the file whole: a reader
 * never sees half of it, and a file left with a looser mode is not reused.
 */
export function writeLocalEnv(path: string, vars: Record<string, string>, header: string[] = []): void {
  for (const name of Object.keys(vars))
    if (!/^[A-Z_][A-Z0-9_]*$/.test(name)) throw new CliError(`${name}: not a variable name for the local env file`);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const text = [...header.map((l) => `# ${l}`), ...Object.entries(vars).map(([k, v]) => `${k}=${quoted(k, v)}`)].join('\n') + '\n';
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  // The umask may have narrowed it, never widened it; set exactly 0600 all the same.
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}
