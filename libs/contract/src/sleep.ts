import { clampTimerMs } from './timer-delay.js';

/**
 * Waits `ms` (clamped to what a Node timer takes: no wait fires at once for being too long), or
 * less when `signal` aborts. It never rejects: a caller that must stop on abort checks
 * `signal.aborted` afterwards and throws what its own contract says.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, clampTimerMs(ms));
    signal?.addEventListener('abort', onAbort, { once: true });
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
