export interface PeriodicTaskOptions {
  /** Pause between the end of one run and the start of the next. */
  intervalMs: number;
  /** Delay of the first run after `start` (default: `intervalMs`). */
  firstDelayMs?: number;
  /** Told of a failed run; the next one runs on schedule all the same. */
  onError?: (err: unknown) => void;
}

/**
 * Background work on a schedule (sweeps, samplers): one run at a time, the next `intervalMs` after
 * the previous one ended, so a slow run never piles up behind itself; `stop` cancels the next run
 * and waits for a running one.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly work: () => Promise<unknown>,
    private readonly opts: PeriodicTaskOptions,
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.work()
        .then(
          () => undefined,
          (err: unknown) => this.opts.onError?.(err),
        )
        .finally(() => {
          this.running = undefined;
          if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.opts.firstDelayMs ?? this.opts.intervalMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
