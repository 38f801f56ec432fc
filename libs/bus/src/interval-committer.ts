import type { Consumer } from 'kafkajs';

/**
 * Commits a plain kafkajs consumer's processed offsets every `intervalMs` instead of after every
 * fetched batch: kafkajs' autoCommit sends one OffsetCommit per partition batch, each a write to
 * the broker's offsets log (under bench:dispatch the dispatcher's event fan-out alone sent ~150/s,
 * twice its fetches). Run the consumer with `autoCommit: false` and report each processed message.
 * What was not committed yet is delivered again after a restart or a rebalance (at least once).
 */
export class IntervalCommitter {
  private pending = new Map<string, { topic: string; partition: number; offset: string }>();
  /** Bumped by every rebalance: a failed commit's offsets go back only within the same assignment. */
  private assignment = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly consumer: Consumer,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
    // Offsets read before a rebalance may belong to partitions another member owns afterwards.
    consumer.on(consumer.events.REBALANCING, () => {
      this.pending.clear();
      this.assignment++;
    });
  }

  /** The message at `offset` of the partition is done. */
  processed(topic: string, partition: number, offset: string): void {
    this.pending.set(`${topic}/${partition}`, { topic, partition, offset: (BigInt(offset) + 1n).toString() });
  }

  /**
   * Commits what is pending now. After a failed commit its offsets are pending again, unless a
   * newer one of the partition arrived meanwhile or the group rebalanced.
   */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const taken = this.pending;
    const assignment = this.assignment;
    this.pending = new Map();
    try {
      await this.consumer.commitOffsets([...taken.values()]);
    } catch {
      if (assignment !== this.assignment) return;
      for (const [key, offset] of taken) if (!this.pending.has(key)) this.pending.set(key, offset);
    }
  }

  /** Stops the timer after a last commit; call before disconnecting the consumer. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
