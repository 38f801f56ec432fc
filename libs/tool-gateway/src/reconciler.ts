import { sleep } from '@mesh/contract';
import type { ToolObservation } from '@mesh/agent-sdk';
import type { EffectLedger } from './effect-ledger.js';
import type { ToolGateway } from './tool-gateway.js';
import { abortError } from './slot-supplier.js';

export interface ReconcilerOptions {
  intervalMs?: number;
  batch?: number;
  /** Observes the number of unresolved unknowns after each pass (a metric of its own). */
  onUnknownCount?: (n: number) => void;
  /** Observes each outcome the reconciler settled (a metric of its own). */
  onResolved?: (tool: string, observation: ToolObservation) => void;
}

/**
 * Resolves unknown outcomes in the background: asks the tool's server by idempotency key and records
 * the answer. A handler waiting on an unknown outcome polls the ledger through `waitFor`.
 */
export class Reconciler {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly ledger: EffectLedger,
    private readonly gateways: () => ToolGateway[],
    private readonly opts: ReconcilerOptions = {},
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.runOnce()
        .catch(() => undefined)
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs ?? 1000);
        });
    };
    this.timer = setTimeout(tick, this.opts.intervalMs ?? 1000);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass over unknown entries; returns how many were resolved. */
  async runOnce(): Promise<number> {
    let resolved = 0;
    for (const entry of await this.ledger.listUnknown(this.opts.batch ?? 50)) {
      for (const gw of this.gateways()) {
        const obs = await gw.reconcile(entry.key).catch(() => undefined);
        if (obs) {
          resolved++;
          this.opts.onResolved?.(entry.tool, obs);
          break;
        }
      }
    }
    this.opts.onUnknownCount?.(await this.ledger.countUnknown());
    return resolved;
  }

  /**
   * Waits until `key` is no longer unknown; resolves with its observation, or rejects when `signal`
   * aborts. A failed read of the ledger (Postgres restarting, a pooled connection it cut) is waited
   * out within the same budget: answering "unknown" at once would end turns whose side effect the
   * reconciler settles a moment later.
   */
  async waitFor(key: string, signal: AbortSignal, pollMs = 200): Promise<ToolObservation | undefined> {
    for (;;) {
      if (signal.aborted) throw abortError(signal);
      const entry = await this.ledger.get(key).catch(() => 'unreadable' as const);
      if (entry === 'unreadable') {
        await sleep(pollMs);
        continue;
      }
      if (!entry) return undefined;
      if (entry.state === 'ok' || entry.state === 'error') {
        return {
          status: entry.state,
          tool: entry.tool,
          idempotencyKey: key,
          text: entry.result?.text ?? '',
          ...(entry.result?.data ? { data: entry.result.data } : {}),
          replayed: true,
        };
      }
      if (entry.state === 'absent') return undefined;
      await sleep(pollMs);
    }
  }
}
