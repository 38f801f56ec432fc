// CPU accounting shared by the benchmarks: CPU time per process from /proc (Linux; undefined
// elsewhere), and the pids of the Postgres and Kafka processes a run is charged for.
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * CPU time (ms, user + system) a process has used so far; `withChildren` adds its children that
 * exited (a Postgres backend's time moves to the postmaster when it ends).
 */
export function cpuMs(pid, withChildren = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0);
    return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

/** CPU time (ms) of `pids` together; `postmaster`'s includes its backends that ended. */
export function cpuMsOf(pids, postmaster) {
  return pids.reduce((s, p) => s + (cpuMs(p, p === postmaster) ?? 0), 0);
}

const pgrep = (pattern) => {
  try {
    return execSync(`pgrep ${pattern}`, { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/**
 * Pids of this machine's Postgres processes (the postmaster apart) and of the Kafka broker. With
 * `kafkaPort`, only the broker scripts/kafka.sh started on that port (its log directory is
 * `logs-<port>`), so another broker on the machine (a chaos cluster) is not counted; every broker
 * when none matches.
 */
export function infraPids({ kafkaPort } = {}) {
  const brokers = pgrep('-f kafka.Kafka');
  const cmdline = (p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const ours = kafkaPort ? brokers.filter((p) => cmdline(p).includes(`logs-${kafkaPort}`)) : [];
  return { postmaster: pgrep('-o -x postgres')[0], postgres: pgrep('-x postgres'), kafka: ours.length > 0 ? ours : brokers };
}
