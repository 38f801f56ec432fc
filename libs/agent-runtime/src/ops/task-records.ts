import type { LedgerTask, OpsTaskDetail } from '@mesh/contract';
import type { SqlRunner } from '@mesh/database';

/** Filters of {@link TaskRecords.list}; an unset one matches all. */
export interface LedgerTaskFilter {
  tenant?: string;
  agentId?: string;
  state?: string;
  limit: number;
}

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : d === null || d === undefined ? null : String(d));

/** `00-<trace id>-<span id>-<flags>` → the trace id; null for anything else. */
export function traceIdOf(traceparent: string | null): string | null {
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '');
  return m && !/^0+$/.test(m[1]!) ? m[1]! : null;
}

/** The text of a turn's reply as the ledger holds it (`{role, parts: [{type: 'text', text}…]}`); null without one. */
export function replyText(reply: unknown): string | null {
  const parts = (reply as { parts?: unknown } | null)?.parts;
  if (!Array.isArray(parts)) return null;
  const text = parts
    .map((p: { type?: unknown; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .filter(Boolean)
    .join('\n');
  return text || null;
}

/**
 * Read-only views of the execution and effect ledgers for operators, across tenants: the ops
 * token sees every tenant (it is the operator's, never a caller's).
 */
export class TaskRecords {
  constructor(private readonly sql: SqlRunner) {}

  /** Tasks by their latest turn, most recently changed first. */
  async list(f: LedgerTaskFilter): Promise<LedgerTask[]> {
    const rows = (await this.sql.query(
      `SELECT * FROM (
         SELECT DISTINCT ON (tenant, task_id) tenant, agent_id, task_id, context_id, turn,
                CASE WHEN state = 'running' THEN 'running' ELSE COALESCE(final_state, state) END AS state, updated_at,
                reply_message
         FROM agents.executions
         WHERE ($1::text IS NULL OR tenant = $1) AND ($2::text IS NULL OR agent_id = $2)
         ORDER BY tenant, task_id, turn DESC) t
       WHERE ($3::text IS NULL OR state = $3)
       ORDER BY updated_at DESC LIMIT $4`,
      [f.tenant ?? null, f.agentId ?? null, f.state ?? null, f.limit],
    )) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      tenant: String(r.tenant),
      agentId: String(r.agent_id),
      taskId: String(r.task_id),
      contextId: String(r.context_id),
      turn: Number(r.turn),
      state: String(r.state),
      updatedAt: iso(r.updated_at)!,
      message: replyText(r.reply_message),
    }));
  }

  /** A task's executions (oldest turn first) and tool calls (oldest first); undefined when the ledgers hold nothing of it. */
  async task(taskId: string): Promise<OpsTaskDetail | undefined> {
    const executions = (await this.sql.query(
      `SELECT e.*, EXISTS (SELECT 1 FROM agents.cancellations c WHERE c.execution_id = e.execution_id) AS canceled
       FROM agents.executions e WHERE e.task_id = $1 ORDER BY e.turn`,
      [taskId],
    )) as Array<Record<string, unknown>>;
    if (executions.length === 0) return undefined;
    const first = executions[0]!;
    const effects = (await this.sql.query(
      `SELECT * FROM agents.tool_effects WHERE tenant = $1 AND task_id = $2 ORDER BY created_at, idempotency_key`,
      [first.tenant, taskId],
    )) as Array<Record<string, unknown>>;
    return {
      tenant: String(first.tenant),
      agentId: String(first.agent_id),
      taskId,
      executions: executions.map((e) => {
        const traceparent = (e.traceparent as string | null) ?? null;
        return {
          executionId: String(e.execution_id),
          turn: Number(e.turn),
          state: String(e.state),
          finalState: (e.final_state as string | null) ?? null,
          attempt: Number(e.attempt),
          owner: String(e.owner),
          canceled: Boolean(e.canceled),
          traceId: traceIdOf(traceparent),
          traceparent,
          createdAt: iso(e.created_at)!,
          finishedAt: iso(e.finished_at),
        };
      }),
      effects: effects.map((x) => ({
        key: String(x.idempotency_key),
        executionId: String(x.execution_id),
        tool: String(x.tool),
        sideEffect: Boolean(x.side_effect),
        state: String(x.state),
        reason: (x.reason as string | null) ?? null,
        attempts: Number(x.attempts),
        result: x.result && typeof (x.result as { text?: unknown }).text === 'string' ? (x.result as { text: string }).text : null,
        updatedAt: iso(x.updated_at)!,
      })),
    };
  }
}
