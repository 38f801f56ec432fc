import { onAbort } from './abort-waiters.js';
import { clampTimerMs } from './timer-delay.js';

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
