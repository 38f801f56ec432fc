import type { AgentMessage } from '@mesh/agent-sdk';
import type { TaskEvent } from '@mesh/contract';
import { batchKeys, rowsOf, StatementBatcher, type SqlRunner } from '@mesh/database';

/** A turn about to be run. */
export interface ExecutionClaim {
  executionId: string;
  tenant: string;
  agentId: string;
  taskId: string;
  contextId: string;
  turn: number;
  input: AgentMessage;
  /** The W3C trace context the turn runs under, kept for operators (the console's task detail). */
  traceparent?: string;
}

/**
 * - claimed: run it (`attempt` counts takeovers; event seqs of an attempt start above the previous one's);
 *   `canceled`: a cancel of the execution was recorded (report CANCELED without running it).
 * - finished: already ran; re-emit `events` instead of running again.
 * - busy: another live owner runs it now.
 */
export type ClaimOutcome =
  | { kind: 'claimed'; attempt: number; canceled: boolean }
  | { kind: 'finished'; events: TaskEvent[] }
  | { kind: 'busy'; leaseRemainingMs: number };

/** What a renewal found: still ours, lost to another owner, or ours but canceled meanwhile. */
export type RenewOutcome = 'renewed' | 'lost' | 'canceled';

/** A cancel of one execution, recorded whether or not a turn of it runs anywhere yet. */
export interface ExecutionCancel {
  executionId: string;
  tenant: string;
  taskId: string;
  reason?: string;
}

/**
 * Execution dedup: one row per execution id under a unique constraint, owned through a lease.
 * Cancels are recorded here too, so a cancel read before its run (commands reordered across
 * dispatcher replicas, or read by a process that died or lost the partition since) still stops
 * the turn wherever and whenever its run is read.
 */
export interface ExecutionLedger {
  claim(c: ExecutionClaim, owner: string, leaseMs: number): Promise<ClaimOutcome>;
  /** Extends the lease; `lost` when `owner` lost the execution (its lease expired and someone took over). */
  renew(executionId: string, owner: string, leaseMs: number): Promise<RenewOutcome>;
  /** Records a cancel of the execution (idempotent): later claims see it, and so do renewals of a running turn. */
  cancel(c: ExecutionCancel): Promise<void>;
  /** Gives the execution up without an outcome: its lease ends now, so the next delivery takes it over at once. */
  abandon(executionId: string, owner: string): Promise<void>;
  /** Records the outcome and the final events; false when `owner` no longer owns the execution. */
  finish(executionId: string, owner: string, outcome: { state: string; reply?: AgentMessage; events: TaskEvent[] }): Promise<boolean>;
  /** Messages of earlier turns of a task (user input and the agent's reply of each), oldest first. */
  history(tenant: string, taskId: string, beforeTurn: number): Promise<AgentMessage[]>;
}

/** The execution ids of a batch (its JSON parameter `$1`), so its updates find their rows by key. */
const BATCH_EXECUTION_IDS = batchKeys('$1', 'execution_id');

/** How {@link PostgresExecutionLedger} groups the statements of the turns in flight. */
export interface ExecutionLedgerBatching {
  /** Most executions in one statement (default 1024). */
  maxBatch?: number;
  /** Statements of one kind (claim, renew, finish) running at once (default 2). */
  maxInFlight?: number;
}

interface ClaimItem {
  c: ExecutionClaim;
  owner: string;
  leaseMs: number;
}
interface RenewItem {
  executionId: string;
  owner: string;
  leaseMs: number;
}
interface FinishItem {
  executionId: string;
  owner: string;
  o: { state: string; reply?: AgentMessage; events: TaskEvent[] };
}

/**
 * ExecutionLedger on `agents.executions`. Claims, renewals and finishes of the turns in flight are
 * group-committed: the calls that arrive while a statement of their kind runs go together in the
 * next one (one multi-row statement, one round trip, one commit; see StatementBatcher), its rows
 * as one JSON parameter (encoded once; pg would escape a jsonb[] element by element), so an
 * idle worker pays no added latency and a busy one far fewer statements per turn. Each call keeps
 * its single-execution meaning: an execution id that occurs twice in one batch goes in a later
 * statement (one row may be changed only once per statement, and the second claim must see the
 * first), and a statement that fails is retried item by item (round by round, so a duplicate still
 * comes after its first), so a bad item fails only its caller.
 */
export class PostgresExecutionLedger implements ExecutionLedger {
  private readonly claims: StatementBatcher<ClaimItem, Settled<ClaimOutcome>>;
  private readonly renewals: StatementBatcher<RenewItem, Settled<RenewOutcome>>;
  private readonly finishes: StatementBatcher<FinishItem, Settled<boolean>>;

  constructor(
    private readonly sql: SqlRunner,
    batching: ExecutionLedgerBatching = {},
  ) {
    const opts = { maxBatch: batching.maxBatch ?? 1024, maxInFlight: batching.maxInFlight ?? 2 };
    this.claims = new StatementBatcher(
      (items) =>
        inRounds(
          items,
          (i) => i.c.executionId,
          (r) => this.claimAll(r),
        ),
      opts,
    );
    this.renewals = new StatementBatcher(
      (items) =>
        inRounds(
          items,
          (i) => i.executionId,
          (r) => this.renewAll(r),
        ),
      opts,
    );
    this.finishes = new StatementBatcher(
      (items) =>
        inRounds(
          items,
          (i) => i.executionId,
          (r) => this.finishAll(r),
        ),
      opts,
    );
  }

  claim(c: ExecutionClaim, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    return this.claims.submit({ c, owner, leaseMs }).then(unwrap);
  }

  renew(executionId: string, owner: string, leaseMs: number): Promise<RenewOutcome> {
    return this.renewals.submit({ executionId, owner, leaseMs }).then(unwrap);
  }

  finish(executionId: string, owner: string, o: { state: string; reply?: AgentMessage; events: TaskEvent[] }): Promise<boolean> {
    return this.finishes.submit({ executionId, owner, o }).then(unwrap);
  }

  /** Claims executions with distinct ids: insert, or take over a running one whose lease expired; a finished one is never re-run. */
  private async claimAll(items: ClaimItem[]): Promise<ClaimOutcome[]> {
    // Rows in id order, so two statements that overlap (two workers) lock in the same order and cannot deadlock.
    const sorted = [...items].sort((a, b) => compare(a.c.executionId, b.c.executionId));
    const claimed = rowsOf<{ execution_id: string; attempt: number; canceled: boolean }>(
      await this.sql.query(
        `INSERT INTO agents.executions AS e (execution_id, tenant, agent_id, task_id, context_id, turn, state, owner, lease_until, input_message, traceparent)
         SELECT v.execution_id, v.tenant, v.agent_id, v.task_id, v.context_id, v.turn, 'running', v.owner,
                now() + v.lease_ms * interval '1 millisecond', v.input_message, v.traceparent
         FROM jsonb_to_recordset($1::jsonb) AS v(execution_id text, tenant text, agent_id text, task_id text, context_id text,
           turn int, owner text, lease_ms int, input_message jsonb, traceparent text)
         ON CONFLICT (execution_id) DO UPDATE
           SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, attempt = e.attempt + 1, updated_at = now()
         WHERE e.state = 'running' AND e.lease_until < now()
         RETURNING e.execution_id, e.attempt, EXISTS (SELECT 1 FROM agents.cancellations c WHERE c.execution_id = e.execution_id) AS canceled`,
        [
          JSON.stringify(
            sorted.map(({ c, owner, leaseMs }) => ({
              execution_id: c.executionId,
              tenant: c.tenant,
              agent_id: c.agentId,
              task_id: c.taskId,
              context_id: c.contextId,
              turn: c.turn,
              owner,
              lease_ms: leaseMs,
              input_message: c.input,
              traceparent: c.traceparent,
            })),
          ),
        ],
      ),
    );
    const out = new Map<string, ClaimOutcome>(
      claimed.map((r) => [r.execution_id, { kind: 'claimed', attempt: r.attempt, canceled: r.canceled }]),
    );
    const others = items.filter((i) => !out.has(i.c.executionId)).map((i) => i.c.executionId);
    if (others.length > 0) {
      const existing = rowsOf<{ execution_id: string; state: string; final_events: TaskEvent[] | null; remaining_ms: number }>(
        await this.sql.query(
          `SELECT execution_id, state, final_events, GREATEST(0, EXTRACT(EPOCH FROM (lease_until - now())) * 1000)::int AS remaining_ms
           FROM agents.executions WHERE execution_id = ANY($1::text[])`,
          [others],
        ),
      );
      for (const row of existing) {
        out.set(
          row.execution_id,
          row.state === 'finished'
            ? { kind: 'finished', events: row.final_events ?? [] }
            : { kind: 'busy', leaseRemainingMs: row.remaining_ms },
        );
      }
    }
    // A row gone between the two statements (the retention sweep deleted it): claim it again.
    const gone = items.filter((i) => !out.has(i.c.executionId));
    if (gone.length > 0) for (const [i, o] of (await this.claimAll(gone)).entries()) out.set(gone[i].c.executionId, o);
    return items.map((i) => out.get(i.c.executionId)!);
  }

  /** Extends the leases of executions with distinct ids; one not returned was lost by its owner. */
  private async renewAll(items: RenewItem[]): Promise<RenewOutcome[]> {
    const sorted = [...items].sort((a, b) => compare(a.executionId, b.executionId));
    const renewed = rowsOf<{ execution_id: string; canceled: boolean }>(
      await this.sql.query(
        `UPDATE agents.executions e SET lease_until = now() + v.lease_ms * interval '1 millisecond', updated_at = now()
         FROM jsonb_to_recordset($1::jsonb) AS v(execution_id text, owner text, lease_ms int)
         WHERE e.execution_id = v.execution_id AND e.owner = v.owner AND e.state = 'running'
           AND e.execution_id = ANY (${BATCH_EXECUTION_IDS})
         RETURNING e.execution_id, EXISTS (SELECT 1 FROM agents.cancellations c WHERE c.execution_id = e.execution_id) AS canceled`,
        [JSON.stringify(sorted.map((i) => ({ execution_id: i.executionId, owner: i.owner, lease_ms: i.leaseMs })))],
      ),
    );
    const found = new Map(renewed.map((r) => [r.execution_id, r.canceled]));
    return items.map((i) => {
      const canceled = found.get(i.executionId);
      return canceled === undefined ? 'lost' : canceled ? 'canceled' : 'renewed';
    });
  }

  /** Records the outcomes of executions with distinct ids; false for one its owner no longer owns. */
  private async finishAll(items: FinishItem[]): Promise<boolean[]> {
    const sorted = [...items].sort((a, b) => compare(a.executionId, b.executionId));
    const finished = rowsOf<{ execution_id: string }>(
      await this.sql.query(
        `UPDATE agents.executions e
         SET state = 'finished', final_state = v.final_state, reply_message = v.reply_message, final_events = v.final_events,
             finished_at = now(), updated_at = now()
         FROM jsonb_to_recordset($1::jsonb) AS v(execution_id text, owner text, final_state text, reply_message jsonb, final_events jsonb)
         WHERE e.execution_id = v.execution_id AND e.owner = v.owner AND e.state = 'running'
           AND e.execution_id = ANY (${BATCH_EXECUTION_IDS})
         RETURNING e.execution_id`,
        [
          JSON.stringify(
            sorted.map((i) => ({
              execution_id: i.executionId,
              owner: i.owner,
              final_state: i.o.state,
              reply_message: i.o.reply,
              final_events: i.o.events,
            })),
          ),
        ],
      ),
    );
    const done = new Set(finished.map((r) => r.execution_id));
    return items.map((i) => done.has(i.executionId));
  }

  async cancel(c: ExecutionCancel): Promise<void> {
    await this.sql.query(
      `INSERT INTO agents.cancellations (execution_id, tenant, task_id, reason) VALUES ($1, $2, $3, $4)
       ON CONFLICT (execution_id) DO NOTHING`,
      [c.executionId, c.tenant, c.taskId, c.reason ?? null],
    );
  }

  async abandon(executionId: string, owner: string): Promise<void> {
    await this.sql.query(
      `UPDATE agents.executions SET lease_until = now() - interval '1 millisecond', updated_at = now()
       WHERE execution_id = $1 AND owner = $2 AND state = 'running'`,
      [executionId, owner],
    );
  }

  async history(tenant: string, taskId: string, beforeTurn: number): Promise<AgentMessage[]> {
    const r = rowsOf<{ input_message: AgentMessage; reply_message: AgentMessage | null }>(
      await this.sql.query(
        `SELECT input_message, reply_message FROM agents.executions
         WHERE tenant = $1 AND task_id = $2 AND turn < $3 AND state = 'finished' ORDER BY turn`,
        [tenant, taskId, beforeTurn],
      ),
    );
    return r.flatMap((x) => (x.reply_message ? [x.input_message, x.reply_message] : [x.input_message]));
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** One item's answer from a batch: its result, or the error that is its alone. */
export type Settled<O> = { ok: true; value: O } | { ok: false; error: unknown };

const unwrap = <O>(s: Settled<O>): O => {
  if (!s.ok) throw s.error;
  return s.value;
};

/**
 * Runs `run` over rounds of items with distinct keys, in order (the first occurrence of each key
 * in the first round, the second in the next, …), and returns each item's settled result in the
 * items' order. A batch is a set of calls that happened together; taking a key's calls one after
 * another gives each the answer it would have had alone. A round that fails is run again item by
 * item, so a bad item fails only its own caller — and a later round still runs after it.
 */
export async function inRounds<I, O>(items: I[], key: (i: I) => string, run: (round: I[]) => Promise<O[]>): Promise<Array<Settled<O>>> {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    const k = key(item);
    const n = seen.get(k) ?? 0;
    seen.set(k, n + 1);
    (rounds[n] ??= []).push(index);
  });
  const out = new Array<Settled<O>>(items.length);
  const alone = async (item: I): Promise<Settled<O>> => {
    try {
      const [value] = await run([item]);
      return { ok: true, value };
    } catch (error) {
      return { ok: false, error };
    }
  };
  for (const round of rounds) {
    const batch = round.map((i) => items[i]);
    let results: Array<Settled<O>>;
    try {
      const values = await run(batch);
      if (values.length !== batch.length) throw new Error(`batch statement returned ${values.length} results for ${batch.length} items`);
      results = values.map((value) => ({ ok: true, value }));
    } catch (error) {
      // The keys of a round are distinct: its items may run alone side by side.
      results = batch.length === 1 ? [{ ok: false, error }] : await Promise.all(batch.map(alone));
    }
    round.forEach((index, j) => (out[index] = results[j]));
  }
  return out;
}

/** In-memory ExecutionLedger with the same rules, for unit tests. */
export class InMemoryExecutionLedger implements ExecutionLedger {
  private readonly rows = new Map<
    string,
    ExecutionClaim & {
      owner: string;
      attempt: number;
      leaseUntil: number;
      state: 'running' | 'finished';
      reply?: AgentMessage;
      events: TaskEvent[];
    }
  >();
  private readonly canceled = new Set<string>();

  async claim(c: ExecutionClaim, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const now = Date.now();
    const row = this.rows.get(c.executionId);
    const canceled = this.canceled.has(c.executionId);
    if (!row) {
      this.rows.set(c.executionId, { ...c, owner, attempt: 1, leaseUntil: now + leaseMs, state: 'running', events: [] });
      return { kind: 'claimed', attempt: 1, canceled };
    }
    if (row.state === 'finished') return { kind: 'finished', events: structuredClone(row.events) };
    if (row.leaseUntil < now) {
      Object.assign(row, { owner, attempt: row.attempt + 1, leaseUntil: now + leaseMs });
      return { kind: 'claimed', attempt: row.attempt, canceled };
    }
    return { kind: 'busy', leaseRemainingMs: row.leaseUntil - now };
  }

  async renew(executionId: string, owner: string, leaseMs: number): Promise<RenewOutcome> {
    const row = this.rows.get(executionId);
    if (!row || row.owner !== owner || row.state !== 'running') return 'lost';
    row.leaseUntil = Date.now() + leaseMs;
    return this.canceled.has(executionId) ? 'canceled' : 'renewed';
  }

  async cancel(c: ExecutionCancel): Promise<void> {
    this.canceled.add(c.executionId);
  }

  async abandon(executionId: string, owner: string): Promise<void> {
    const row = this.rows.get(executionId);
    if (row && row.owner === owner && row.state === 'running') row.leaseUntil = 0;
  }

  async finish(executionId: string, owner: string, o: { state: string; reply?: AgentMessage; events: TaskEvent[] }): Promise<boolean> {
    const row = this.rows.get(executionId);
    if (!row || row.owner !== owner || row.state !== 'running') return false;
    Object.assign(row, { state: 'finished', reply: o.reply, events: structuredClone(o.events) });
    return true;
  }

  async history(tenant: string, taskId: string, beforeTurn: number): Promise<AgentMessage[]> {
    return [...this.rows.values()]
      .filter((r) => r.tenant === tenant && r.taskId === taskId && r.turn < beforeTurn && r.state === 'finished')
      .sort((a, b) => a.turn - b.turn)
      .flatMap((r) => (r.reply ? [r.input, r.reply] : [r.input]));
  }

  /** Test helper: makes the current owner's lease expire now. */
  expire(executionId: string): void {
    const row = this.rows.get(executionId);
    if (row) row.leaseUntil = 0;
  }
}
