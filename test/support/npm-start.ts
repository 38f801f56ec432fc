import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { NO_KAFKA_PRINCIPAL } from './kafka-principals.js';
import { repoRoot } from './processes.js';

export interface Started {
  child: ChildProcess;
  output: () => string;
  stop(): Promise<number | null>;
}

/**
 * Runs `scripts/start.mjs` (what `npm start` runs after its build) and resolves once it printed that
 * every service is ready. Without the run's Kafka principal, as a reader's shell: each service
 * connects as its own (the broker's credentials file), unless `env` names one.
 */
export async function npmStart(env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, [join(repoRoot, 'scripts/start.mjs')], {
    cwd: repoRoot,
    env: { ...process.env, ...NO_KAFKA_PRINCIPAL, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      await exited;
    }
  });
  const deadline = Date.now() + 150_000;
  while (!out.includes('start: ready')) {
    if (child.exitCode !== null) assert.fail(`npm start exited (${child.exitCode}):\n${out.slice(-3000)}`);
    if (Date.now() > deadline) assert.fail(`npm start not ready within 150 s:\n${out.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    child,
    output: () => out,
    async stop() {
      child.kill('SIGINT');
      return exited;
    },
  };
}
