import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';

/** Repository root (test/dist/support → ../../..). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface SpawnedProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns a node script from the repo (or from `cwd`); it is SIGKILLed at the end of the spec if still
 * running. `env` adds to this process's environment, or with `ownEnv` is the whole of it (a team's
 * process sees only what it is given).
 */
export function spawnNode(
  script: string,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
  { cwd = repoRoot, ownEnv = false }: { cwd?: string; ownEnv?: boolean } = {},
): SpawnedProcess {
  const child = spawn(process.execPath, [script, ...args], {
    cwd,
    env: ownEnv ? env : { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}
