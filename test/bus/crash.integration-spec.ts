import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

const kafka = testKafka('crash');
const worker = new URL('./fixtures/crash-worker.js', import.meta.url).pathname;

function startWorker(env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [worker], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  cleanup(async () => void child.kill('SIGKILL'));
  return child;
}

function readLog(path: string): { started: Map<number, number>; done: Map<number, number> } {
  const started = new Map<number, number>();
  const done = new Map<number, number>();
  if (!existsSync(path)) return { started, done };
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const [what, n] = line.split(' ');
    const map = what === 'start' ? started : what === 'done' ? done : undefined;
    if (map) map.set(Number(n), (map.get(Number(n)) ?? 0) + 1);
  }
  return { started, done };
}

test('SIGKILL mid-batch: the committed offset never passed unfinished work, and a restart finishes everything', async () => {
  const topic = `${uniquePrefix('crash')}commands`;
  const group = `${topic}.workers`;
  const { admin, producer } = await testTopic(kafka, topic, 1);
  const total = 1000;
  await Promise.all(Array.from({ length: total }, (_, i) => producer.send(topic, 'acme:echo', runCommand('acme', `task-${i % 50}`, i))));

  const log = join(mkdtempSync(join(tmpdir(), 'bus-crash-')), 'worker.log');
  const env = { KAFKA_BROKERS: testRun().brokers.join(','), CRASH_TOPIC: topic, CRASH_GROUP: group, CRASH_LOG: log };
  const first = startWorker(env);
  const committedBeforeKill = await eventually(
    'the first worker has committed and has work in flight',
    async () => {
      const [lag] = await admin.consumerLag(group, [topic]);
      const { started, done } = readLog(log);
      const inFlight = [...started.keys()].filter((o) => !done.has(o)).length;
      return lag?.committed && Number(lag.committed) > 0 && done.size >= 200 && inFlight >= 5 ? lag.committed : undefined;
    },
    30_000,
    10,
  );
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));

  const [afterKill] = await admin.consumerLag(group, [topic]);
  const committed = Number(afterKill.committed);
  assert.ok(committed >= Number(committedBeforeKill));
  const crashed = readLog(log);
  assert.ok(crashed.done.size < total, 'the worker was killed before finishing');
  for (let o = 0; o < committed; o++) assert.ok(crashed.done.has(o), `offset ${o} committed (commit at ${committed}) but never finished`);
  const unfinishedAtKill = [...crashed.started.keys()].filter((o) => !crashed.done.has(o));
  assert.ok(unfinishedAtKill.length > 0, 'some work was in flight at the kill');
  for (const o of unfinishedAtKill) assert.ok(o >= committed, `unfinished offset ${o} lies below the commit ${committed}`);

  const second = startWorker(env);
  await eventually('every message finished after the restart', () => readLog(log).done.size === total, 60_000, 100);
  second.kill('SIGTERM');
  await new Promise((r) => second.once('exit', r));

  const { done } = readLog(log);
  for (let o = 0; o < total; o++) assert.ok((done.get(o) ?? 0) >= 1, `offset ${o} never finished`);
  // Only work at or beyond the crash-time commit may have run twice.
  for (const [o, n] of done) if (n > 1) assert.ok(o >= committed, `offset ${o} below the commit ran ${n} times`);
  const [final] = await admin.consumerLag(group, [topic]);
  assert.equal(final.committed, String(total), 'the graceful stop committed everything');
});
