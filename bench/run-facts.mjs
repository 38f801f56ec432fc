// What every benchmark's result file says about the run: the machine, and the code measured.
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { kafkaFacts } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;

/**
 * The machine a figure was measured on, and the broker: an authenticating one (SASL/SCRAM, as
 * scripts/kafka.sh starts it) costs a handshake per connection, so a comparison says which it ran on.
 */
export function machine() {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kafka: kafkaFacts(),
  };
}

/**
 * The code measured: HEAD, and +dirty when tracked files other than the results differ from it
 * (read it before a benchmark runs: they rewrite bench/results/). Null outside a git checkout.
 */
export function measuredCommit() {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)bench/results'], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${head}+dirty` : head;
  } catch {
    return null;
  }
}
