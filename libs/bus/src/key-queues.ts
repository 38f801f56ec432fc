/** A FIFO with O(1) push and shift, compacting its backing array now and then. */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined as T;
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  get length(): number {
    return this.items.length - this.head;
  }

  removeWhere(pred: (item: T) => boolean): T[] {
    const kept: T[] = [];
    const removed: T[] = [];
    for (let i = this.head; i < this.items.length; i++) (pred(this.items[i]) ? removed : kept).push(this.items[i]);
    this.items = kept;
    this.head = 0;
    return removed;
  }
}

interface KeyQueue<T> {
  waiting: Fifo<T>;
  running: boolean;
}

/**
 * Per ordering key a queue: items of one key run one at a time, in the order they were pushed;
 * items of different keys run concurrently. Keys whose next item may start sit in a ready set
 * that is walked oldest-ready first, so keys take turns.
 */
export class KeyQueues<T> {
  private readonly byKey = new Map<string, KeyQueue<T>>();
  private readonly ready = new Set<string>();
  private waitingCount = 0;
  private runningCount = 0;

  constructor(private readonly keyOf: (item: T) => string) {}

  /** Queues an item behind earlier items of its key. */
  push(item: T): void {
    const key = this.keyOf(item);
    let q = this.byKey.get(key);
    if (!q) this.byKey.set(key, (q = { waiting: new Fifo<T>(), running: false }));
    q.waiting.push(item);
    this.waitingCount++;
    if (!q.running) this.ready.add(key);
  }

  /**
   * Starts the next item whose key has nothing running and that `admit` accepts (e.g. its tenant
   * has a free slot); returns undefined when none may start now.
   */
  take(admit?: (item: T) => boolean): T | undefined {
    for (const key of this.ready) {
      const q = this.byKey.get(key)!;
      const item = q.waiting.peek()!;
      if (admit && !admit(item)) continue;
      q.waiting.shift();
      q.running = true;
      this.ready.delete(key);
      this.waitingCount--;
      this.runningCount++;
      return item;
    }
    return undefined;
  }

  /**
   * Also starts up to `max` waiting items of a running item's key, in order, while `accept` holds
   * for the next one: they run together with it, as one (their key stays running until
   * `done(item)`).
   */
  takeMore(item: T, max: number, accept: (next: T) => boolean): T[] {
    const key = this.keyOf(item);
    const q = this.byKey.get(key);
    if (!q?.running) throw new Error(`no running item for key ${key}`);
    const more: T[] = [];
    while (more.length < max) {
      const next = q.waiting.peek();
      if (next === undefined || !accept(next)) break;
      more.push(q.waiting.shift()!);
    }
    this.waitingCount -= more.length;
    return more;
  }

  /** Ends the running item of its key, letting the key's next item become ready. */
  done(item: T): void {
    const key = this.keyOf(item);
    const q = this.byKey.get(key);
    if (!q?.running) throw new Error(`no running item for key ${key}`);
    q.running = false;
    this.runningCount--;
    if (q.waiting.length > 0) this.ready.add(key);
    else this.byKey.delete(key);
  }

  /** Removes waiting (not running) items that match, e.g. those of a revoked partition. */
  removeWaiting(pred: (item: T) => boolean): T[] {
    const removed: T[] = [];
    for (const [key, q] of this.byKey) {
      const gone = q.waiting.removeWhere(pred);
      if (gone.length === 0) continue;
      removed.push(...gone);
      this.waitingCount -= gone.length;
      if (q.waiting.length === 0) {
        this.ready.delete(key);
        if (!q.running) this.byKey.delete(key);
      }
    }
    return removed;
  }

  /** Items queued and not started. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** Items started and not done. */
  get running(): number {
    return this.runningCount;
  }
}
