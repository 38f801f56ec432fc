import { sleep } from '@mesh/contract';
import type { ToolObservation } from '@mesh/agent-sdk';
import type { EffectLedger } from './effect-ledger.js';
import { abortError } from './slot-supplier.js';

/** One attempt at settling an unknown outcome: undefined while it stays unknown. */
export type SettleAttempt = (key: string) => Promise<{ observation: ToolObservation; settledHere: boolean } | undefined>;

/** The tool gateway's reconcile loop (`ToolGatewayOptions.reconcile`). */
export interface ReconcilerOptions {
  intervalMs?: number;
  batch?: number;
  /** Observes the number of unresolved unknowns after each pass (a metric of its own). */
  onUnknownCount?: (n: number) => void;
  /** Observes each outcome this loop settled (a metric of its own). */
  onResolved?: (tool: string, observation: ToolObservation) => void;
}

/**
 * Resolves unknown outcomes in the background: asks the tool's server by idempotency key and records
 * the answer. A handler waiting on an unknown outcome polls the ledger through `waitFor`. Owned by a
 * `ToolGateway`, it covers the unknowns of the gateway's tools (`tools`: name prefixes) only.
 */
export class Reconciler {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly ledger: EffectLedger,
    private readonly settle: SettleAttempt,
    private readonly tools: string[],
    private readonly opts: ReconcilerOptions = {},
  ) {}

  start(): void {
    if (this.timer) return;
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
    for (const entry of await this.ledger.listUnknown(this.opts.batch ?? 50, this.tools)) {
      const settled = await this.settle(entry.key).catch(() => undefined);
      if (settled?.settledHere) {
        resolved++;
        this.opts.onResolved?.(entry.tool, settled.observation);
      }
    }
    this.opts.onUnknownCount?.(await this.ledger.countUnknown(this.tools));
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
