/** The waiters on each signal and the one listener that wakes them all. */
const waitersOf = new WeakMap<AbortSignal, { waiting: Set<() => void>; all: () => void }>();

/**
 * Calls `wake` when `signal` aborts (at once if it has), until the returned function is called.
 * Every waiter on one signal shares a single listener on it: a turn's many concurrent waits
 * (retries, a busy idempotency key, a full tool server, its SDK requests) would otherwise add one
 * each, past Node's limit of ten and its warning, and leave them behind.
 */
export function onAbort(signal: AbortSignal, wake: () => void): () => void {
  if (signal.aborted) {
    wake();
    return () => undefined;
  }
  let entry = waitersOf.get(signal);
  if (!entry) {
    const waiting = new Set<() => void>();
    const all = () => {
      waitersOf.delete(signal);
      waiting.forEach((w) => w());
    };
    entry = { waiting, all };
    waitersOf.set(signal, entry);
    signal.addEventListener('abort', all, { once: true });
  }
  const { waiting, all } = entry;
  waiting.add(wake);
  return () => {
    waiting.delete(wake);
    if (waiting.size === 0 && waitersOf.get(signal)?.waiting === waiting) {
      waitersOf.delete(signal);
      signal.removeEventListener('abort', all);
    }
  };
}
