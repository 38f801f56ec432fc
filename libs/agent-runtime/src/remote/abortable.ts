/** Resolves with `p`, or rejects with the signal's reason as soon as it aborts (`p` runs on). */
export function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** An error's message for a log line or a wrapping error (never its stack). */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
