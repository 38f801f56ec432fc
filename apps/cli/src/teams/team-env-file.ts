// The team's env file: every setting its worker needs to run its agents with the team's own
// credentials. It holds secrets: mode 0600, and never written over an existing file.
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { CliError, ExitCode } from '../cli-error.js';
import { quoted } from '../local-env.js';

/** Refuses a path that exists, before anything is created for the team. */
export function assertEnvFileFree(path: string): void {
  if (existsSync(path))
    throw new CliError(`${path} exists: the team's env file is never overwritten; choose another --out`, ExitCode.usage);
}

/** The file's text: comment lines, then one `NAME=value` line per setting (dotenv and POSIX shell both read it). */
export function renderEnvFile(vars: Record<string, string>, header: string[]): string {
  return [...header.map((l) => `# ${l}`), ...Object.entries(vars).map(([k, v]) => `${k}=${quoted(k, v)}`)].join('\n') + '\n';
}

/** Writes the file with mode 0600; fails when it exists (created exclusively, no race with another writer). */
export function writeEnvFile(path: string, vars: Record<string, string>, header: string[]): void {
  const text = renderEnvFile(vars, header);
  try {
    writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') assertEnvFileFree(path);
    throw new CliError(`cannot write ${path}: ${(err as Error).message}`);
  }
  // The umask may have narrowed it, never widened it; exactly 0600 all the same.
  chmodSync(path, 0o600);
}
