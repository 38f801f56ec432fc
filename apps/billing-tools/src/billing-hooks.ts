import { MeshError } from '@mesh/contract';

/** When a delay happens: before any work, or after the refund is committed (the "200 but no result" case). */
export type HookPhase = 'before' | 'after-commit';

interface DelayRule {
  phase: HookPhase;
  ms: number;
  times: number;
}

/**
 * Test hooks: make a tool slow or hang, count calls and aborted calls. Refuses to arm unless the
 * server was started with BILLING_TEST_HOOKS, so production can never be made to hang.
 */
export class BillingHooks {
  private readonly rules = new Map<string, DelayRule>();
  private readonly callCounts = new Map<string, number>();
  private readonly abortCounts = new Map<string, number>();

  constructor(readonly enabled: boolean) {}

  /** The next `times` calls of `tool` wait `ms` at `phase` (or until the caller cancels). */
  delay(tool: string, rule: { phase: HookPhase; ms: number; times?: number }): void {
    if (!this.enabled) throw new MeshError('FORBIDDEN', 'test hooks are disabled (BILLING_TEST_HOOKS=false)');
    this.rules.set(tool, { phase: rule.phase, ms: rule.ms, times: rule.times ?? 1 });
  }

  clear(): void {
    this.rules.clear();
  }

  calls(tool: string): number {
    return this.callCounts.get(tool) ?? 0;
  }

  aborted(tool: string): number {
    return this.abortCounts.get(tool) ?? 0;
  }

  /** Called by the tools; counts the call at `before`. */
  async at(tool: string, phase: HookPhase, signal: AbortSignal): Promise<void> {
    if (phase === 'before') this.callCounts.set(tool, this.calls(tool) + 1);
    const rule = this.rules.get(tool);
    if (!this.enabled || !rule || rule.phase !== phase || rule.times <= 0) return;
    rule.times--;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, rule.ms);
      // A hang must never keep a process alive on its own (tests end while a call still hangs).
      t.unref();
      const onAbort = () => {
        clearTimeout(t);
        this.abortCounts.set(tool, this.aborted(tool) + 1);
        reject(new MeshError('CANCELLED', `${tool} cancelled by the caller`));
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
