import { MeshError, onAbort } from '@mesh/contract';

/** A reserved unit of capacity; release it exactly once. */
export interface Slot {
  release(): void;
}

/** Bounded capacity (tool-server calls, in-flight turns): work waits for a slot instead of piling up. */
export interface SlotSupplier {
  /** Resolves with a slot when one is free; rejects when `signal` aborts first. */
  reserve(signal?: AbortSignal): Promise<Slot>;
  /** Slots in use. */
  readonly inUse: number;
  /** Callers waiting for a slot. */
  readonly waiting: number;
}

/** FIFO counting semaphore. */
export class SemaphoreSlotSupplier implements SlotSupplier {
  private used = 0;
  private readonly queue: Array<{ grant: () => void }> = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new MeshError('CONFIG_INVALID', `slot capacity must be >= 1, got ${capacity}`);
  }

  get inUse(): number {
    return this.used;
  }

  get waiting(): number {
    return this.queue.length;
  }

  reserve(signal?: AbortSignal): Promise<Slot> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.used < this.capacity) {
      this.used++;
      return Promise.resolve(this.slot());
    }
    return new Promise<Slot>((resolve, reject) => {
      // Waiters on one signal (a turn's calls to a full server) share one abort listener.
      const unsubscribe = signal
        ? onAbort(signal, () => {
            const i = this.queue.indexOf(waiter);
            if (i >= 0) this.queue.splice(i, 1);
            reject(abortError(signal));
          })
        : undefined;
      const waiter = {
        grant: () => {
          unsubscribe?.();
          resolve(this.slot());
        },
      };
      this.queue.push(waiter);
    });
  }

  private slot(): Slot {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const next = this.queue.shift();
        // Hand the slot straight to the next waiter so `used` never dips below capacity while others wait.
        if (next) next.grant();
        else this.used--;
      },
    };
  }
}

/** The error a cancelled wait rejects with. */
export function abortError(signal: AbortSignal): MeshError {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'aborted');
  return new MeshError('CANCELLED', `aborted: ${reason}`, { cause: signal.reason });
}
