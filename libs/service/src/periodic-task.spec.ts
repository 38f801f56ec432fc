import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PeriodicTask } from './periodic-task.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('runs one at a time; a failed run is reported and the next runs on schedule', async () => {
  const errors: unknown[] = [];
  let runs = 0;
  let concurrent = 0;
  let maxConcurrent = 0;
  const task = new PeriodicTask(
    async () => {
      runs++;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      await sleep(5);
      concurrent--;
      if (runs === 1) throw new Error('database restarting');
    },
    { intervalMs: 1, firstDelayMs: 0, onError: (e) => errors.push(e) },
  );
  task.start();
  for (let i = 0; i < 200 && runs < 3; i++) await sleep(5);
  await task.stop();
  assert.ok(runs >= 3);
  assert.equal(maxConcurrent, 1);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /database restarting/);
});

test('stop waits for the running run and none starts after it', async () => {
  let finished = 0;
  let started = 0;
  const task = new PeriodicTask(
    async () => {
      started++;
      await sleep(30);
      finished++;
    },
    { intervalMs: 1, firstDelayMs: 0 },
  );
  task.start();
  await sleep(10);
  await task.stop();
  assert.equal(finished, started, 'the running one finished before stop resolved');
  const after = started;
  await sleep(40);
  assert.equal(started, after);
});
