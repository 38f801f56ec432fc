import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadDispatcherConfig, MAX_DISPATCHER_PROCESSES } from './dispatcher.config.js';
import { usableCpus } from './usable-cpus.js';

const processes = (value: string | undefined) => loadDispatcherConfig({ DISPATCHER_PROCESSES: value }).DISPATCHER_PROCESSES;

test('DISPATCHER_PROCESSES: 1 by default, a count, or auto (one per CPU)', () => {
  assert.equal(processes(undefined), 1);
  assert.equal(processes(''), 1);
  assert.equal(processes('2'), 2);
  assert.equal(processes(' 4 '), 4);
  assert.equal(processes(String(MAX_DISPATCHER_PROCESSES)), MAX_DISPATCHER_PROCESSES);
  assert.equal(processes('auto'), Math.min(usableCpus(), MAX_DISPATCHER_PROCESSES));
  assert.equal(processes('AUTO'), Math.min(usableCpus(), MAX_DISPATCHER_PROCESSES));
});

test('DISPATCHER_PROCESSES: anything else is refused, naming what is accepted', () => {
  for (const bad of ['0', '-1', '1.5', '65', 'many', '2x']) {
    assert.throws(
      () => processes(bad),
      (err: Error) => err.message.includes(`DISPATCHER_PROCESSES=${JSON.stringify(bad)}: expected auto or a whole number from 1 to 64`),
      bad,
    );
  }
});

test('DISPATCHER_ROOT_AGENT: unset or empty serves no agent at the root; an agent id is taken; anything else is refused', () => {
  const rootAgent = (value: string | undefined) => loadDispatcherConfig({ DISPATCHER_ROOT_AGENT: value }).DISPATCHER_ROOT_AGENT;
  assert.equal(rootAgent(undefined), undefined);
  assert.equal(rootAgent(' '), undefined);
  assert.equal(rootAgent('tck-agent'), 'tck-agent');
  for (const bad of ['Tck Agent', '../a2a', 'a/b']) assert.throws(() => rootAgent(bad), /DISPATCHER_ROOT_AGENT/, bad);
});

test('DISPATCHER_TENANT_BYTES_*: sizes in bytes (units of 1024) with defaults; 0 turns the budget off; anything else is refused', () => {
  const config = loadDispatcherConfig({});
  assert.equal(config.DISPATCHER_TENANT_BYTES_PER_S, 1024 ** 2);
  assert.equal(config.DISPATCHER_TENANT_BYTES_BURST, 4 * 1024 ** 2);
  const perSecond = (value: string) => loadDispatcherConfig({ DISPATCHER_TENANT_BYTES_PER_S: value }).DISPATCHER_TENANT_BYTES_PER_S;
  assert.equal(perSecond('0'), 0);
  assert.equal(perSecond('2048'), 2048);
  assert.equal(perSecond(' 512kb '), 512 * 1024);
  assert.equal(perSecond('2MB'), 2 * 1024 ** 2);
  for (const bad of ['-1', '1.5mb', 'lots', '1tb']) {
    assert.throws(() => perSecond(bad), /DISPATCHER_TENANT_BYTES_PER_S=.*expected a size like/, bad);
  }
});
