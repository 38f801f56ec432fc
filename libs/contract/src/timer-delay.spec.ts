import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clampTimerMs, deadlineTimerMs, MAX_TIMER_MS } from './timer-delay.js';

test('a delay is clamped to what a Node timer takes', () => {
  assert.equal(clampTimerMs(1500), 1500);
  assert.equal(clampTimerMs(-5), 0);
  assert.equal(clampTimerMs(Number.NaN), 0);
  assert.equal(clampTimerMs(9999999999), MAX_TIMER_MS);
  assert.equal(clampTimerMs(Number.POSITIVE_INFINITY), MAX_TIMER_MS);
  assert.equal(clampTimerMs(2 ** 53), MAX_TIMER_MS);
});

test('a deadline beyond the longest timer arms none; a near or passed one arms its delay', () => {
  const now = 1_000_000;
  assert.equal(deadlineTimerMs(undefined, now), undefined);
  assert.equal(deadlineTimerMs(now + 250, now), 250);
  assert.equal(deadlineTimerMs(now - 250, now), 0);
  assert.equal(deadlineTimerMs(now + MAX_TIMER_MS, now), MAX_TIMER_MS);
  assert.equal(deadlineTimerMs(now + MAX_TIMER_MS + 1, now), undefined);
  assert.equal(deadlineTimerMs(now + 9999999999, now), undefined);
  assert.equal(deadlineTimerMs(2 ** 53 - 1, now), undefined);
  assert.equal(deadlineTimerMs(Number.NaN, now), undefined);
  assert.equal(deadlineTimerMs(Number.POSITIVE_INFINITY, now), undefined);
});

test('a timer armed with a clamped far delay does not fire at once', async () => {
  let fired = false;
  const t = setTimeout(() => (fired = true), clampTimerMs(9999999999));
  await new Promise((r) => setTimeout(r, 20));
  clearTimeout(t);
  assert.equal(fired, false);
});
