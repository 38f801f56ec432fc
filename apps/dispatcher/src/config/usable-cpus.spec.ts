import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cgroupCpuQuota, usableCpus, type FileReader } from './usable-cpus.js';

const files =
  (entries: Record<string, string>): FileReader =>
  (path) =>
    entries[path];

test('cgroup v2 cpu.max: a quota caps the CPUs, rounded up; "max" is no limit', () => {
  assert.equal(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '200000 100000\n' }), 64), 2);
  assert.equal(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }), 64), 2);
  assert.equal(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }), 64), 1);
  assert.equal(usableCpus(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 64), 64);
  assert.equal(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': '150000 100000' })), 1.5);
});

test('a quota above the CPUs the process may run on does not raise the count', () => {
  assert.equal(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '800000 100000' }), 2), 2);
});

test('cgroup v1: cfs quota over period; -1 is no limit', () => {
  const v1 = (quota: string) =>
    files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': `${quota}\n`, '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' });
  assert.equal(usableCpus(v1('300000'), 16), 3);
  assert.equal(usableCpus(v1('-1'), 16), 16);
});

test('no cgroup files, or ones that do not parse: the CPUs the process may run on', () => {
  assert.equal(usableCpus(files({}), 8), 8);
  for (const junk of ['', 'abc 100000', '100000 0', '0 100000', 'NaN NaN']) {
    assert.equal(usableCpus(files({ '/sys/fs/cgroup/cpu.max': junk }), 8), 8, JSON.stringify(junk));
  }
});
