// CPU accounting shared by the benchmarks: CPU time per process from /proc (Linux; undefined
// elsewhere), and the CPU time of the Postgres and Kafka processes a run is charged for.
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { kafkaBrokers } from './settings.mjs';

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

/** CPU time (ms) of `pids` together (`withChildren`: each with its children that exited). */
export function cpuMsOf(pids, withChildren = false) {
  return pids.reduce((s, p) => s + (cpuMs(p, withChildren) ?? 0), 0);
}

const pgrep = (pattern) => {
  try {
    return execSync(`pgrep ${pattern}`, { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/**
 * Pids of this machine's Postgres processes and of the Kafka broker. With
 * `kafkaPort`, only the broker scripts/kafka.sh started on that port (its log directory is
 * `logs-<port>`), so another broker on the machine (a chaos cluster) is not counted; every broker
 * when none matches.
 */
function infraPids({ kafkaPort } = {}) {
  const brokers = pgrep('-f kafka.Kafka');
  const cmdline = (p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const ours = kafkaPort ? brokers.filter((p) => cmdline(p).includes(`logs-${kafkaPort}`)) : [];
  return { postgres: pgrep('-x postgres'), kafka: ours.length > 0 ? ours : brokers };
}

/** The port of the first broker the benchmarks connect to (KAFKA_BROKERS, as their stacks read it). */
const brokerPort = () => kafkaBrokers()[0].split(':').pop();

/**
 * CPU time (ms) Postgres and the Kafka broker (by default the one on KAFKA_BROKERS' first port) have
 * used so far, from the processes running now:
 * the difference of two readings is what they spent between them. Postgres' processes are listed
 * afresh at each reading — a pool opens backends under load (and closes idle ones), and a list
 * taken before a run would miss every backend opened during it; one that ended is in its
 * postmaster's children time (counted for every Postgres process: a backend has no children).
 */
export function infraCpuMs({ kafkaPort = brokerPort() } = {}) {
  const { postgres, kafka } = infraPids({ kafkaPort });
  return { postgres: cpuMsOf(postgres, true), kafka: cpuMsOf(kafka) };
}

/**
 * CPU time (ms) the whole machine has spent busy so far, its elapsed CPU time (ms, all cores) and
 * the context switches it has made: the difference of two readings gives how busy the cores were
 * between them and how often they switched (/proc/stat; steal and iowait count as not busy).
 */
export function machineCpuMs() {
  try {
    const lines = readFileSync('/proc/stat', 'utf8').split('\n');
    const [, ...f] = lines[0].trim().split(/\s+/).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f;
    const busy = user + nice + system + irq + softirq;
    const ctxt = lines.find((l) => l.startsWith('ctxt '));
    return {
      busy: (busy * 1000) / 100,
      all: ((busy + idle + iowait + steal) * 1000) / 100,
      contextSwitches: ctxt ? Number(ctxt.split(/\s+/)[1]) : undefined,
    };
  } catch {
    return undefined;
  }
}
