/** Runs one statement for many items; returns one result per item, in order. */
export type BatchRunner<I, O> = (items: I[]) => Promise<O[]>;

export interface StatementBatcherOptions {
  /** Largest batch (bounds the statement's size). */
  maxBatch: number;
  /** Batches running at once; items arriving meanwhile wait and go together in the next one. */
  maxInFlight: number;
}

interface Pending<I, O> {
  item: I;
  resolve(o: O): void;
  reject(err: unknown): void;
}

/**
 * Natural batching of a hot statement: callers submit one item each; items submitted while
 * `maxInFlight` batches are running are queued and sent together as one statement when a slot
 * frees. An idle system sends each item at once (no added latency); a loaded one sends fewer,
 * larger statements — one round trip and one commit for many requests (group commit).
 *
 * When a batch of several items fails, each item is retried on its own, so one bad item (say, a
 * value the database refuses) fails only its own caller.
 */
export class StatementBatcher<I, O> {
  private queue: Array<Pending<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: BatchRunner<I, O>,
    private readonly opts: StatementBatcherOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // Items submitted in the same tick (a fetched Kafka batch, concurrent requests) go together.
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.opts.maxBatch);
      this.inFlight += 1;
      void this.runBatch(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async runBatch(batch: Array<Pending<I, O>>): Promise<void> {
    try {
      const out = await this.run(batch.map((p) => p.item));
      if (out.length !== batch.length) throw new Error(`batch statement returned ${out.length} results for ${batch.length} items`);
      batch.forEach((p, i) => p.resolve(out[i]));
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err);
      // Isolate the failure: every item alone (rare path; a statement error is not the norm).
      await Promise.all(
        batch.map(async (p) => {
          try {
            const [o] = await this.run([p.item]);
            p.resolve(o);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
    }
  }
}
