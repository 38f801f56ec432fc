import type { JsonObject } from '@mesh/contract';

/** pending: a call is in flight; ok/error: the tool answered; unknown: side effect with no answer; absent: reconciled as never applied. */
export type EffectState = 'pending' | 'ok' | 'error' | 'unknown' | 'absent';

/** What a tool answered, as recorded (protocol-free). */
export interface RecordedResult {
  text: string;
  data?: JsonObject;
}

/** A new call about to be made. */
export interface NewEffect {
  key: string;
  tenant: string;
  taskId: string;
  executionId: string;
  /** Namespaced tool name. */
  tool: string;
  argsHash: string;
  args: JsonObject;
  sideEffect: boolean;
  /** Who makes the call (one execution attempt); only the owner may record its outcome. */
  owner: string;
}

/** One row of the ledger. */
export interface EffectEntry extends NewEffect {
  state: EffectState;
  result?: RecordedResult;
  reason?: string;
  attempts: number;
}

/**
 * - claimed: the caller must make the call and record its outcome.
 * - recorded: the key already has an outcome (ok, error or unknown): use it, do not call.
 * - busy: another caller of the same execution attempt is making this call now.
 */
export type ClaimResult = { kind: 'claimed' } | { kind: 'recorded'; entry: EffectEntry } | { kind: 'busy'; entry: EffectEntry };

/**
 * The effect ledger: one row per idempotency key under a unique constraint, so a repeated call
 * returns the first result. A pending side-effecting call whose owner is gone (its lease expired,
 * or the same execution is now run by another attempt) becomes `unknown`, never re-executed.
 */
export interface EffectLedger {
  claim(effect: NewEffect, leaseMs: number): Promise<ClaimResult>;
  /** Records the tool's answer; ignored unless `owner` still owns the pending row. */
  complete(key: string, owner: string, state: 'ok' | 'error', result: RecordedResult): Promise<void>;
  /** Records that a side-effecting call's outcome is unknown. */
  markUnknown(key: string, owner: string, reason: string): Promise<void>;
  /** Forgets a pending read-only call that was given up, so it can be made again. */
  release(key: string, owner: string): Promise<void>;
  /** Reconciler: settles an unknown entry. Returns false when it was not unknown any more. */
  resolve(key: string, state: 'ok' | 'error' | 'absent', result?: RecordedResult): Promise<boolean>;
  get(key: string): Promise<EffectEntry | undefined>;
  /** Side-effecting calls one execution (turn) of a task made, oldest first. */
  sideEffectsOf(tenant: string, taskId: string, executionId: string): Promise<EffectEntry[]>;
  /** Unknown entries, oldest first. */
  /** Unknown outcomes, oldest first; with `toolPrefixes`, only of tools whose name starts with one of them. */
  listUnknown(limit: number, toolPrefixes?: string[]): Promise<EffectEntry[]>;
  countUnknown(toolPrefixes?: string[]): Promise<number>;
}

/** In-memory ledger with the same rules, for unit tests. */
export class InMemoryEffectLedger implements EffectLedger {
  private readonly rows = new Map<string, EffectEntry & { leaseUntil: number }>();

  async claim(effect: NewEffect, leaseMs: number): Promise<ClaimResult> {
    const now = Date.now();
    const row = this.rows.get(effect.key);
    if (!row) {
      this.rows.set(effect.key, { ...effect, state: 'pending', attempts: 1, leaseUntil: now + leaseMs });
      return { kind: 'claimed' };
    }
    const ownerGone =
      row.state === 'pending' && (row.leaseUntil < now || (row.executionId === effect.executionId && row.owner !== effect.owner));
    if (row.state === 'absent' || (ownerGone && !row.sideEffect)) {
      Object.assign(row, {
        ...effect,
        state: 'pending',
        result: undefined,
        reason: undefined,
        attempts: row.attempts + 1,
        leaseUntil: now + leaseMs,
      });
      return { kind: 'claimed' };
    }
    if (ownerGone) Object.assign(row, { state: 'unknown', reason: 'the caller was lost during the call' });
    return row.state === 'pending' ? { kind: 'busy', entry: this.copy(row) } : { kind: 'recorded', entry: this.copy(row) };
  }

  async complete(key: string, owner: string, state: 'ok' | 'error', result: RecordedResult): Promise<void> {
    const row = this.rows.get(key);
    if (row && row.state === 'pending' && row.owner === owner) Object.assign(row, { state, result });
  }

  async markUnknown(key: string, owner: string, reason: string): Promise<void> {
    const row = this.rows.get(key);
    if (row && row.state === 'pending' && row.owner === owner) Object.assign(row, { state: 'unknown', reason });
  }

  async release(key: string, owner: string): Promise<void> {
    const row = this.rows.get(key);
    if (row && row.state === 'pending' && row.owner === owner) this.rows.delete(key);
  }

  async resolve(key: string, state: 'ok' | 'error' | 'absent', result?: RecordedResult): Promise<boolean> {
    const row = this.rows.get(key);
    if (!row || row.state !== 'unknown') return false;
    Object.assign(row, { state, result });
    return true;
  }

  async get(key: string): Promise<EffectEntry | undefined> {
    const row = this.rows.get(key);
    return row ? this.copy(row) : undefined;
  }

  async sideEffectsOf(tenant: string, taskId: string, executionId: string): Promise<EffectEntry[]> {
    return [...this.rows.values()]
      .filter((r) => r.sideEffect && r.tenant === tenant && r.taskId === taskId && r.executionId === executionId)
      .map((r) => this.copy(r));
  }

  async listUnknown(limit: number, toolPrefixes?: string[]): Promise<EffectEntry[]> {
    return [...this.rows.values()]
      .filter((r) => r.state === 'unknown' && ofTools(r.tool, toolPrefixes))
      .slice(0, limit)
      .map((r) => this.copy(r));
  }

  async countUnknown(toolPrefixes?: string[]): Promise<number> {
    return [...this.rows.values()].filter((r) => r.state === 'unknown' && ofTools(r.tool, toolPrefixes)).length;
  }

  private copy(row: EffectEntry & { leaseUntil: number }): EffectEntry {
    const { leaseUntil: _lease, ...entry } = row;
    return structuredClone(entry);
  }
}

function ofTools(tool: string, prefixes: string[] | undefined): boolean {
  return prefixes === undefined || prefixes.some((p) => tool.startsWith(p));
}
