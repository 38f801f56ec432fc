import type { AgentMessage } from '@mesh/agent-sdk';
import type { TaskEvent } from '@mesh/contract';

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

/** Anything that runs a parameterised query and returns rows (a TypeORM DataSource). */
export interface SqlRunner {
  query(text: string, params?: unknown[]): Promise<unknown>;
}

/** TypeORM returns `[rows, count]` for UPDATE/DELETE and rows otherwise. */
const rows = <T>(r: unknown): T[] => {
  if (!Array.isArray(r)) return [];
  return (r.length === 2 && Array.isArray(r[0]) && typeof r[1] === 'number' ? r[0] : r) as T[];
};

/** ExecutionLedger on `agents.executions`. */
export class PostgresExecutionLedger implements ExecutionLedger {
  constructor(private readonly sql: SqlRunner) {}

  async claim(c: ExecutionClaim, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    // Insert, or take over a running execution whose lease expired; a finished one is never re-run.
    const claimed = rows<{ attempt: number; canceled: boolean }>(
      await this.sql.query(
        `INSERT INTO agents.executions AS e (execution_id, tenant, agent_id, task_id, context_id, turn, state, owner, lease_until, input_message, traceparent)
         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, now() + $8 * interval '1 millisecond', $9, $10)
         ON CONFLICT (execution_id) DO UPDATE
           SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, attempt = e.attempt + 1, updated_at = now()
         WHERE e.state = 'running' AND e.lease_until < now()
         RETURNING attempt, EXISTS (SELECT 1 FROM agents.cancellations c WHERE c.execution_id = e.execution_id) AS canceled`,
        [c.executionId, c.tenant, c.agentId, c.taskId, c.contextId, c.turn, owner, leaseMs, JSON.stringify(c.input), c.traceparent ?? null],
      ),
    );
    if (claimed.length > 0) return { kind: 'claimed', attempt: claimed[0].attempt, canceled: claimed[0].canceled };
    const existing = rows<{ state: string; final_events: TaskEvent[] | null; remaining_ms: number }>(
      await this.sql.query(
        `SELECT state, final_events, GREATEST(0, EXTRACT(EPOCH FROM (lease_until - now())) * 1000)::int AS remaining_ms
         FROM agents.executions WHERE execution_id = $1`,
        [c.executionId],
      ),
    );
    const row = existing[0];
    if (!row) return this.claim(c, owner, leaseMs);
    if (row.state === 'finished') return { kind: 'finished', events: row.final_events ?? [] };
    return { kind: 'busy', leaseRemainingMs: row.remaining_ms };
  }

  async renew(executionId: string, owner: string, leaseMs: number): Promise<RenewOutcome> {
    const r = rows<{ canceled: boolean }>(
      await this.sql.query(
        `UPDATE agents.executions e SET lease_until = now() + $3 * interval '1 millisecond', updated_at = now()
         WHERE execution_id = $1 AND owner = $2 AND state = 'running'
         RETURNING EXISTS (SELECT 1 FROM agents.cancellations c WHERE c.execution_id = e.execution_id) AS canceled`,
        [executionId, owner, leaseMs],
      ),
    );
    if (r.length === 0) return 'lost';
    return r[0].canceled ? 'canceled' : 'renewed';
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

  async finish(executionId: string, owner: string, o: { state: string; reply?: AgentMessage; events: TaskEvent[] }): Promise<boolean> {
    const r = rows(
      await this.sql.query(
        `UPDATE agents.executions SET state = 'finished', final_state = $3, reply_message = $4, final_events = $5, finished_at = now(), updated_at = now()
         WHERE execution_id = $1 AND owner = $2 AND state = 'running' RETURNING 1`,
        [executionId, owner, o.state, o.reply ? JSON.stringify(o.reply) : null, JSON.stringify(o.events)],
      ),
    );
    return r.length > 0;
  }

  async history(tenant: string, taskId: string, beforeTurn: number): Promise<AgentMessage[]> {
    const r = rows<{ input_message: AgentMessage; reply_message: AgentMessage | null }>(
      await this.sql.query(
        `SELECT input_message, reply_message FROM agents.executions
         WHERE tenant = $1 AND task_id = $2 AND turn < $3 AND state = 'finished' ORDER BY turn`,
        [tenant, taskId, beforeTurn],
      ),
    );
    return r.flatMap((x) => (x.reply_message ? [x.input_message, x.reply_message] : [x.input_message]));
  }
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
