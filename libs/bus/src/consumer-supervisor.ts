import type { Consumer, ConsumerRunConfig } from 'kafkajs';

export interface ConsumerSupervisorOptions {
  /** True once the owner is stopping on purpose: a crash then is left alone. */
  stopping(): boolean;
  /** Where the crash and a failed restart are reported (the owner's logger or `onError`). */
  report?(err: unknown, what: string): void;
  /** First wait before a restart; doubles per consecutive crash up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Keeps a long-lived kafkajs consumer consuming after a crash kafkajs does not recover from.
 * kafkajs restarts a crashed consumer only when the error is retriable; after any other (a
 * non-retriable coordinator error while a broker restarts, an error thrown past the handler) it
 * disconnects and the group silently loses the member for good — the process stays up and healthy
 * while nothing is consumed. This runs the consumer with `config` (resolving as `consumer.run`
 * does) and, after such a crash, runs it again with the same config, with backoff, until it joins.
 */
export function runSupervised(consumer: Consumer, config: ConsumerRunConfig, opts: ConsumerSupervisorOptions): Promise<void> {
  const report = opts.report ?? (() => undefined);
  const initial = opts.initialBackoffMs ?? 1000;
  const max = opts.maxBackoffMs ?? 30_000;
  let crashes = 0;
  let timer: NodeJS.Timeout | undefined;
  const restartLater = () => {
    clearTimeout(timer);
    const delay = Math.min(max, initial * 2 ** Math.min(crashes, 16));
    crashes += 1;
    timer = setTimeout(() => {
      if (opts.stopping()) return;
      consumer.run(config).catch((err: unknown) => {
        report(err, 'restarting the crashed consumer failed; trying again');
        if (!opts.stopping()) restartLater();
      });
    }, delay);
    timer.unref();
  };
  consumer.on(consumer.events.GROUP_JOIN, () => {
    crashes = 0;
  });
  consumer.on(consumer.events.CRASH, (event) => {
    const { error, groupId, restart } = event.payload;
    if (restart || opts.stopping()) return; // kafkajs restarts it itself, or the owner stops it
    report(error, `consumer of ${groupId} crashed and kafkajs gave up on it; restarting it`);
    restartLater();
  });
  return consumer.run(config);
}
