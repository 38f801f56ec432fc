import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Reads a file's text, or undefined when it does not exist or cannot be read. */
export type FileReader = (path: string) => string | undefined;

const readIfPresent: FileReader = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/**
 * CPUs this process may keep busy: the CPUs it may run on (`os.availableParallelism`), capped by
 * the cgroup's CPU quota — a container's CPU limit. Node 20's libuv counts the host's CPUs and
 * ignores the quota, so a pod limited to 2 CPUs on a 64-core node would otherwise start 64
 * processes, each with its own Kafka and Postgres connections.
 */
export function usableCpus(read: FileReader = readIfPresent, cpus: number = availableParallelism()): number {
  const quota = cgroupCpuQuota(read);
  return quota === undefined ? cpus : Math.max(1, Math.min(cpus, Math.ceil(quota)));
}

/**
 * The cgroup's CPU quota in CPUs (fractions kept: 1.5 = 150 ms per 100 ms), or undefined when
 * none is set: cgroup v2 `cpu.max` ("max 100000" or "<quota> <period>"), else cgroup v1
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us` (a quota of -1 is none).
 */
export function cgroupCpuQuota(read: FileReader): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max');
  if (v2 !== undefined) {
    const [quota, period = '100000'] = v2.trim().split(/\s+/);
    return ratio(quota, period);
  }
  const quota = read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us');
  const period = read('/sys/fs/cgroup/cpu/cpu.cfs_period_us');
  return quota === undefined || period === undefined ? undefined : ratio(quota.trim(), period.trim());
}

function ratio(quota: string, period: string): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  return Number.isFinite(q) && Number.isFinite(p) && q > 0 && p > 0 ? q / p : undefined;
}
