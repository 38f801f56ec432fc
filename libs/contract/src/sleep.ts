import { clampTimerMs } from './timer-delay.js';

/** The sleepers on each signal and the one listener that wakes them all. */
const sleepers = new WeakMap<AbortSignal, { waiting: Set<() => void>; all: () => void }>();

/**
 * Calls `wake` when `signal` aborts, until the returned function is called. Every waiter on one
 * signal shares a single listener on it: a turn's many concurrent waits (retries, a busy
 * idempotency key) would otherwise add one each, past Node's limit of ten and its warning.
 */
function onAbort(signal: AbortSignal, wake: () => void): () => void {
  let entry = sleepers.get(signal);
  if (!entry) {
    const waiting = new Set<() => void>();
    const all = () => {
      sleepers.delete(signal);
      waiting.forEach((w) => w());
    };
    entry = { waiting, all };
    sleepers.set(signal, entry);
    signal.addEventListener('abort', all, { once: true });
  }
  const { waiting, all } = entry;
  waiting.add(wake);
  return () => {
    waiting.delete(wake);
    if (waiting.size === 0 && sleepers.get(signal)?.waiting === waiting) {
      sleepers.delete(signal);
      signal.removeEventListener('abort', all);
    }
  };
}

/**
 * Waits `ms` (clamped to what a Node timer takes: no wait fires at once for being too long), or
 * less when `signal` aborts. It never rejects: a caller that must stop on abort checks
 * `signal.aborted` afterwards and throws what its own contract says.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(() => {
      stop?.();
      resolve();
    }, clampTimerMs(ms));
    const stop = signal
      ? onAbort(signal, () => {
          clearTimeout(t);
          resolve();
        })
      : undefined;
  });
}

/**
 * Waits `ms` (clamped like `sleep`), or less when the wait is woken: `register` receives the
 * function that ends it early (a waiter list, a `wake` field). Calling it after the wait ended
 * does nothing.
 */
export function wakeableSleep(ms: number, register: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(wake, clampTimerMs(ms));
    function wake() {
      clearTimeout(t);
      resolve();
    }
    register(wake);
  });
}
