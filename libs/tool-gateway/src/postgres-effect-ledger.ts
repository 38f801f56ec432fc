import { batchKeys, rowsOf, StatementBatcher, type SqlRunner } from '@mesh/database';
import type { ClaimResult, EffectEntry, EffectLedger, EffectState, NewEffect, RecordedResult } from './effect-ledger.js';

/** The idempotency keys of a completion batch (its JSON parameter `$1`), so its update finds its rows by key. */
const BATCH_KEYS = batchKeys('$1', 'k');

interface Row {
  idempotency_key: string;
  tenant: string;
  task_id: string;
  execution_id: string;
  tool: string;
  args_hash: string;
  args: NewEffect['args'];
  side_effect: boolean;
  state: EffectState;
  result: RecordedResult | null;
  reason: string | null;
  owner: string;
  attempts: number;
}

/**
 * Effect ledger in Postgres. The table (created by the owning app's migration) has the
 * idempotency key as primary key: that constraint is what makes a second arrival find the first.
 *
 * The two statements of every call — the claim before it and the completion after — are group
 * committed: claims (and completions) of calls running at once go to Postgres as one statement
 * (`StatementBatcher`), and each caller still waits for its own row to be written before it
 * calls the tool or reports the outcome.
 */
export class PostgresEffectLedger implements EffectLedger {
  private readonly table: string;
  private readonly claims: StatementBatcher<{ e: NewEffect; leaseMs: number }, boolean>;
  private readonly completions: StatementBatcher<{ key: string; owner: string; state: 'ok' | 'error'; result: RecordedResult }, void>;

  /** `table` is schema-qualified and quoted by the caller's migration, e.g. `"agents"."tool_effects"`. */
  constructor(
    private readonly sql: SqlRunner,
    table = '"agents"."tool_effects"',
  ) {
    this.table = table;
    const opts = { maxBatch: 256, maxInFlight: 4 };
    this.claims = new StatementBatcher((items) => this.claimMany(items), opts);
    this.completions = new StatementBatcher((items) => this.completeMany(items), opts);
  }

  async claim(e: NewEffect, leaseMs: number): Promise<ClaimResult> {
    if (await this.claims.submit({ e, leaseMs })) return { kind: 'claimed' };
    await this.sql.query(
      `UPDATE ${this.table} SET state = 'unknown', reason = 'the caller was lost during the call', updated_at = now()
       WHERE idempotency_key = $1 AND state = 'pending' AND side_effect
         AND (lease_until < now() OR (execution_id = $2 AND owner <> $3))`,
      [e.key, e.executionId, e.owner],
    );
    const entry = await this.get(e.key);
    if (!entry) return this.claim(e, leaseMs); // released between the two statements: try again
    return entry.state === 'pending' ? { kind: 'busy', entry } : { kind: 'recorded', entry };
  }

  /**
   * Claims many effects in one statement; true for each one now pending under its caller. A row may
   * be (re)claimed when it was reconciled as never applied, or when a read-only call's owner is
   * gone; a side-effecting call whose owner is gone is NOT re-claimed (`claim`'s second statement).
   * The same key twice in one batch makes Postgres refuse the statement ("cannot affect row a
   * second time"); the batcher then claims each alone, and the second finds the first: busy.
   */
  private async claimMany(items: Array<{ e: NewEffect; leaseMs: number }>): Promise<boolean[]> {
    const claimed = rowsOf<{ idempotency_key: string }>(
      await this.sql.query(
        `INSERT INTO ${this.table} AS t (idempotency_key, tenant, task_id, execution_id, tool, args_hash, args, side_effect, state, owner, lease_until, attempts)
         SELECT u.k, u.te, u.ta, u.ex, u.tl, u.ah, u.a, u.se, 'pending', u.ow, now() + u.lm * interval '1 millisecond', 1
         FROM jsonb_to_recordset($1::jsonb) AS u(k text, te text, ta text, ex text, tl text, ah text, a jsonb, se boolean, ow text, lm float8)
         ON CONFLICT (idempotency_key) DO UPDATE
           SET state = 'pending', owner = EXCLUDED.owner, execution_id = EXCLUDED.execution_id, lease_until = EXCLUDED.lease_until,
               attempts = t.attempts + 1, result = NULL, reason = NULL, updated_at = now()
         WHERE t.state = 'absent'
            OR (t.state = 'pending' AND NOT t.side_effect
                AND (t.lease_until < now() OR (t.execution_id = EXCLUDED.execution_id AND t.owner <> EXCLUDED.owner)))
         RETURNING idempotency_key`,
        // The batch as one JSON document: pg would escape each JSON text of a text[] element by element.
        [
          JSON.stringify(
            items.map(({ e, leaseMs }) => ({
              k: e.key,
              te: e.tenant,
              ta: e.taskId,
              ex: e.executionId,
              tl: e.tool,
              ah: e.argsHash,
              a: e.args,
              se: e.sideEffect,
              ow: e.owner,
              lm: leaseMs,
            })),
          ),
        ],
      ),
    );
    const keys = new Set(claimed.map((r) => r.idempotency_key));
    return items.map((x) => keys.has(x.e.key));
  }

  async complete(key: string, owner: string, state: 'ok' | 'error', result: RecordedResult): Promise<void> {
    await this.completions.submit({ key, owner, state, result });
  }

  private async completeMany(items: Array<{ key: string; owner: string; state: 'ok' | 'error'; result: RecordedResult }>): Promise<void[]> {
    await this.sql.query(
      `UPDATE ${this.table} AS t SET state = u.st, result = u.r, updated_at = now()
       FROM jsonb_to_recordset($1::jsonb) AS u(k text, ow text, st text, r jsonb)
       WHERE t.idempotency_key = u.k AND t.owner = u.ow AND t.state = 'pending' AND t.idempotency_key = ANY (${BATCH_KEYS})`,
      [JSON.stringify(items.map((x) => ({ k: x.key, ow: x.owner, st: x.state, r: x.result })))],
    );
    return items.map(() => undefined);
  }

  async markUnknown(key: string, owner: string, reason: string): Promise<void> {
    await this.sql.query(
      `UPDATE ${this.table} SET state = 'unknown', reason = $3, updated_at = now() WHERE idempotency_key = $1 AND owner = $2 AND state = 'pending'`,
      [key, owner, reason],
    );
  }

  async release(key: string, owner: string): Promise<void> {
    await this.sql.query(`DELETE FROM ${this.table} WHERE idempotency_key = $1 AND owner = $2 AND state = 'pending'`, [key, owner]);
  }

  async resolve(key: string, state: 'ok' | 'error' | 'absent', result?: RecordedResult): Promise<boolean> {
    const rows = rowsOf<{ idempotency_key: string }>(
      await this.sql.query(
        `UPDATE ${this.table} SET state = $2, result = $3, resolved_at = now(), updated_at = now()
         WHERE idempotency_key = $1 AND state = 'unknown' RETURNING idempotency_key`,
        [key, state, result === undefined ? null : JSON.stringify(result)],
      ),
    );
    return rows.length > 0;
  }

  async get(key: string): Promise<EffectEntry | undefined> {
    const rows = rowsOf<Row>(await this.sql.query(`SELECT * FROM ${this.table} WHERE idempotency_key = $1`, [key]));
    return rows[0] ? toEntry(rows[0]) : undefined;
  }

  async sideEffectsOf(tenant: string, taskId: string, executionId: string): Promise<EffectEntry[]> {
    const rows = rowsOf<Row>(
      await this.sql.query(
        `SELECT * FROM ${this.table} WHERE tenant = $1 AND task_id = $2 AND execution_id = $3 AND side_effect ORDER BY created_at`,
        [tenant, taskId, executionId],
      ),
    );
    return rows.map(toEntry);
  }

  async listUnknown(limit: number, toolPrefixes?: string[]): Promise<EffectEntry[]> {
    const rows = rowsOf<Row>(
      await this.sql.query(`SELECT * FROM ${this.table} WHERE state = 'unknown' AND ${OF_TOOLS} ORDER BY updated_at LIMIT $1`, [
        limit,
        toolPrefixes ?? null,
      ]),
    );
    return rows.map(toEntry);
  }

  async countUnknown(toolPrefixes?: string[]): Promise<number> {
    const rows = rowsOf<{ n: number }>(
      await this.sql.query(`SELECT count(*)::int AS n FROM ${this.table} WHERE state = 'unknown' AND ${OF_TOOLS.replaceAll('$2', '$1')}`, [
        toolPrefixes ?? null,
      ]),
    );
    return rows[0]?.n ?? 0;
  }
}

/** `$2`: tool name prefixes, or null for every tool (prefixes compared as text, not LIKE patterns: `_` is in every tool name). */
const OF_TOOLS = `($2::text[] IS NULL OR EXISTS (SELECT 1 FROM unnest($2::text[]) AS p WHERE left(tool, length(p)) = p))`;

function toEntry(r: Row): EffectEntry {
  return {
    key: r.idempotency_key,
    tenant: r.tenant,
    taskId: r.task_id,
    executionId: r.execution_id,
    tool: r.tool,
    argsHash: r.args_hash,
    args: r.args,
    sideEffect: r.side_effect,
    owner: r.owner,
    state: r.state,
    ...(r.result ? { result: r.result } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
    attempts: r.attempts,
  };
}
