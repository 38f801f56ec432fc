import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { sleep, wakeableSleep } from './sleep.js';

test('sleep waits its delay', async () => {
  const t0 = Date.now();
  await sleep(30);
  assert.ok(Date.now() - t0 >= 25);
});

test('sleep ends early, without rejecting, when its signal aborts', async () => {
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort(new Error('stop')), 10);
  await sleep(10_000, ac.signal);
  assert.ok(Date.now() - t0 < 5_000);
});

test('many sleeps on one signal share one listener, removed with the last; an abort wakes them all', async () => {
  const ac = new AbortController();
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const short = Array.from({ length: 12 }, () => sleep(5, ac.signal));
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    await Promise.all(short);
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
    const t0 = Date.now();
    const long = Array.from({ length: 12 }, () => sleep(10_000, ac.signal));
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    ac.abort(new Error('stop'));
    await Promise.all(long);
    assert.ok(Date.now() - t0 < 5_000);
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(
    warnings.map((w) => w.name),
    [],
  );
});

test('sleep with an aborted signal resolves at once', async () => {
  const t0 = Date.now();
  await sleep(10_000, AbortSignal.abort());
  assert.ok(Date.now() - t0 < 1_000);
});

test('sleep clamps a delay beyond the longest timer instead of firing at once', async () => {
  const ac = new AbortController();
  let done = false;
  const p = sleep(9_999_999_999, ac.signal).then(() => (done = true));
  await sleep(30);
  assert.equal(done, false);
  ac.abort();
  await p;
  assert.equal(done, true);
});

test('sleep treats a negative or NaN delay as none', async () => {
  const t0 = Date.now();
  await sleep(-5);
  await sleep(Number.NaN);
  assert.ok(Date.now() - t0 < 1_000);
});

test('wakeableSleep ends when woken, and a late wake does nothing', async () => {
  let wake: (() => void) | undefined;
  const t0 = Date.now();
  const p = wakeableSleep(10_000, (w) => (wake = w));
  setTimeout(() => wake?.(), 10);
  await p;
  assert.ok(Date.now() - t0 < 5_000);
  wake?.();
});

test('wakeableSleep ends at its delay when nothing wakes it, clamped like sleep', async () => {
  const t0 = Date.now();
  await wakeableSleep(30, () => undefined);
  assert.ok(Date.now() - t0 >= 25);
  let wake: (() => void) | undefined;
  let done = false;
  const far = wakeableSleep(9_999_999_999, (w) => (wake = w)).then(() => (done = true));
  await sleep(30);
  assert.equal(done, false);
  wake?.();
  await far;
});
