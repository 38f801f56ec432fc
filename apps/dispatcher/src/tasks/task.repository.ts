import type { DataSource, QueryRunner } from 'typeorm';
import { anyCause, FIRST_TURN, TaskStates, type TaskState as WireTaskState } from '@mesh/contract';
import { preparedQuery, StatementBatcher } from '@mesh/database';
import type { OutboxCommand } from '../outbox/outbox-command.js';
import { INSERT_TASK_DELIVERIES } from '../push/push-config.js';
import { OPEN_STATE_NAMES, TERMINAL_STATE_NAMES } from './task-state.js';

/** A JSON object as stored in jsonb. */
export type Json = Record<string, unknown>;

/** A row of `dispatcher.tasks`. */
export interface TaskRow {
  id: string;
  tenant: string;
  agent_id: string;
  context_id: string;
  state: string;
  turn: number;
  /** Bumped by every write; the projector's compare-and-set reads it. */
  version: number;
  status_timestamp: Date;
  task: Json;
  /** The task's deadline budget: every turn and retry draws from it. */
  deadline_at?: Date | null;
  /** The current turn is failed if no worker has started it by then (see TaskEndings.failOverdue). */
  start_by_at?: Date | null;
  /** On a delegated task: the task that delegated it, and its tree's root. */
  parent_task_id?: string | null;
  root_task_id?: string | null;
  /** The number of the task's last stream event (bigint: a string as pg returns it); absent where not read. */
  event_seq?: string | number;
}

/** A task row picked by {@link TaskRepository.lockOverdue}, with which of its two times passed. */
export type OverdueRow = TaskRow & { past_deadline: boolean };

/**
 * One turn as {@link TaskRepository.insertTurn} writes it: dedup claim, task (created for the
 * first turn, advanced to `turn` for a later one), the turn's execution, its outbox command and
 * the push config given with the message. Timestamps are ISO strings (the rows travel as jsonb).
 */
export interface TurnRow {
  tenant: string;
  agent_id: string;
  message_id: string;
  content_hash: string;
  task_id: string;
  context_id: string;
  turn: number;
  state: string;
  status_timestamp: string;
  task: Json;
  execution_id: string;
  topic: string;
  key: string;
  headers: Record<string, string>;
  value: string;
  /** First turn only: the task's work hash, deadline budget (a later turn keeps the task's). */
  work_hash: string | null;
  deadline_at: string | null;
  start_by_at: string | null;
  /** The push config given with the message (null: none), stored with the task. */
  push_id: string | null;
  push_url: string | null;
  push_token: string | null;
  push_auth_scheme: string | null;
  push_auth_credentials: string | null;
  push_wire_version: string | null;
  /** First turn of a delegated task: its parent and tree root (a later turn keeps the task's). */
  parent_task_id?: string | null;
  root_task_id?: string | null;
}

/** A child as a delegation wait records it: refused and deferred ones have no task. */
export interface WaitChild {
  step: number;
  taskId: string;
  agentId: string | null;
  refused: string | null;
  /** Not started yet: why its tenant's admission refused it for now (the delegation sweep tries again). */
  deferred?: string | null;
  /** A deferred child's ask, kept until it starts. */
  ask?: { parts: Array<Record<string, unknown>>; scopes?: string[] };
}

/** A row of `dispatcher.delegations`: a delegating turn's wait for its children. */
export interface DelegationWait {
  parent_task_id: string;
  turn: number;
  tenant: string;
  root_task_id: string;
  join_mode: 'all' | 'first';
  deadline_at: Date;
  children: WaitChild[];
  /** Who the delegating turn acted for (its next turn acts for the same); DelegationService's shape. */
  authority: object;
}

/** What a tree's executions used of its retry budget (`dispatcher.task_trees`, `tree_usage`). */
export interface TreeSpending {
  budget: number;
  redeliveries: number;
  retries: number;
  /** What is left (negative: overspent). */
  left: number;
}

/** Who first sent a message id to an agent: the hash of what was sent and the task it went to. */
export interface DedupRecord {
  content_hash: string;
  task_id: string;
}

/** The rows ListTasks shows: one tenant and agent, optionally narrowed; a page after `after` ([status timestamp, id]). */
export interface TaskListQuery {
  tenant: string;
  agentId: string;
  contextId?: string;
  state?: WireTaskState;
  statusAfter?: Date;
  after?: readonly [string, string];
  limit: number;
  /** Whether the page shows artifacts (without them they are neither read nor counted). */
  withArtifacts: boolean;
  /** Byte budget of a page's tasks (as JSON text): the rows after the one that passes it come without their task. */
  maxBytes: number;
}

/** Stream events of a task as {@link TaskRepository.readEvents} reads them. */
export interface TaskEventPage {
  /** The task's state (a `@mesh/contract` state name). */
  state: string;
  /** The number of the task's last event (0: none yet). */
  lastSeq: number;
  /** The oldest event number still stored (undefined: none stored). */
  oldestSeq?: number;
  events: Array<{ seq: number; event: Json }>;
}

/**
 * A ListTasks page as stored: each task with its status timestamp at microseconds (the cursor's
 * format), and the filter's total. A row past the byte budget has no task: only that more follow.
 */
export interface TaskListPage {
  total: number;
  rows: Array<{ id: string; task: Json | null; ts: string }>;
}

/** The transaction a TaskRepository runs `work` in: the row locks taken through it hold until it ends. */
export class TaskTransaction {
  /** @internal */
  constructor(readonly runner: QueryRunner) {}
}

/** How often a transaction that lost a lock race (deadlock, serialization failure) is run again. */
const LOCK_RACE_ATTEMPTS = 5;

/** Postgres' deadlock_detected (40P01) and serialization_failure (40001): the transaction may simply be run again. */
const isLockRace = (err: unknown) => anyCause(err, (e) => e.code === '40P01' || e.code === '40001');

/** The ids of every task delegated, directly or further down, by task `$1` of tenant `$2` (a statement's parameters). */
const DESCENDANT_IDS = `(
  WITH RECURSIVE d(id) AS (
    SELECT id FROM dispatcher.tasks WHERE parent_task_id = $1 AND tenant = $2
    UNION SELECT t.id FROM dispatcher.tasks t JOIN d ON t.parent_task_id = d.id)
  SELECT id FROM d)`;

/** State names of `@mesh/contract` as an SQL list (constants, never input: safe to inline, and partial indexes still match). */
const sqlList = (names: readonly WireTaskState[]) => names.map((n) => `'${n}'`).join(', ');

/**
 * Writes turns in one statement (data-modifying CTEs run atomically, in one round trip): each
 * row's dedup claim on (tenant, agent, messageId), then — only for the claims won — the task
 * (inserted for a first turn; a later turn advances the stored row, from the turn before only,
 * keeping its context, deadline budget and work hash), the turn's execution, its outbox command
 * (in row order) and its push config (the same id replaces one stored before). A lost claim (an
 * earlier or concurrent twin, also within the batch) writes nothing. Every data-modifying CTE
 * runs to completion whether or not the final SELECT reads it. Rows of one statement name
 * distinct tasks.
 */
const INSERT_TURNS = `WITH v AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(
         tenant text, agent_id text, message_id text, content_hash text, task_id text, context_id text, turn int, state text,
         status_timestamp timestamptz, task jsonb, execution_id text, topic text, key text, headers jsonb, value text,
         work_hash text, deadline_at timestamptz, start_by_at timestamptz, push_id text, push_url text, push_token text, push_auth_scheme text,
         push_auth_credentials text, push_wire_version text, parent_task_id text, root_task_id text, ord int)),
     d AS (
       INSERT INTO dispatcher.message_dedup (tenant, agent_id, message_id, content_hash, task_id, turn)
       SELECT tenant, agent_id, message_id, content_hash, task_id, turn FROM v ORDER BY ord
       ON CONFLICT DO NOTHING RETURNING task_id),
     t AS (
       INSERT INTO dispatcher.tasks AS x (id, tenant, agent_id, context_id, state, turn, status_timestamp, task, work_hash, deadline_at, start_by_at,
         parent_task_id, root_task_id)
       SELECT v.task_id, v.tenant, v.agent_id, v.context_id, v.state, v.turn, v.status_timestamp, v.task, v.work_hash, v.deadline_at, v.start_by_at,
         v.parent_task_id, v.root_task_id
       FROM v JOIN d ON d.task_id = v.task_id
       ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, turn = EXCLUDED.turn, status_timestamp = EXCLUDED.status_timestamp,
         task = EXCLUDED.task, start_by_at = EXCLUDED.start_by_at, version = x.version + 1, updated_at = now(),
         event_seq = x.event_seq + 1
         WHERE x.turn = EXCLUDED.turn - 1
       RETURNING x.id, x.event_seq),
     l AS (
       -- A later turn resubmits the task: its stream shows the new status under the next number.
       INSERT INTO dispatcher.task_events (task_id, seq, event)
       SELECT v.task_id, t.event_seq, jsonb_build_object('statusUpdate',
         jsonb_build_object('taskId', v.task_id, 'contextId', v.context_id, 'status', v.task->'status'))
       FROM v JOIN t ON t.id = v.task_id WHERE t.event_seq > 0 RETURNING 1),
     e AS (
       INSERT INTO dispatcher.executions (execution_id, task_id, tenant, turn, message_id)
       SELECT v.execution_id, v.task_id, v.tenant, v.turn, v.message_id FROM v JOIN t ON t.id = v.task_id RETURNING task_id),
     o AS (
       INSERT INTO dispatcher.outbox (topic, key, headers, value, agent_id)
       SELECT v.topic, v.key, v.headers, v.value, v.agent_id FROM v JOIN e ON e.task_id = v.task_id ORDER BY v.ord RETURNING 1),
     p AS (
       INSERT INTO dispatcher.push_configs (tenant, task_id, id, url, token, auth_scheme, auth_credentials, wire_version)
       SELECT v.tenant, v.task_id, v.push_id, v.push_url, v.push_token, v.push_auth_scheme, v.push_auth_credentials,
              coalesce(v.push_wire_version, '1.0')
       FROM v JOIN t ON t.id = v.task_id WHERE v.push_url IS NOT NULL
       ON CONFLICT (tenant, task_id, id) DO UPDATE SET url = EXCLUDED.url, token = EXCLUDED.token,
         auth_scheme = EXCLUDED.auth_scheme, auth_credentials = EXCLUDED.auth_credentials, wire_version = EXCLUDED.wire_version
       RETURNING 1)
     SELECT task_id FROM e`;

const turnsParam = (rows: readonly TurnRow[]) => [JSON.stringify(rows.map((r, ord) => ({ ...r, ord })))];
const writtenOf = (rows: readonly TurnRow[], won: Array<{ task_id: string }>) => {
  const written = new Set(won.map((w) => w.task_id));
  return rows.map((r) => written.has(r.task_id));
};

/**
 * Every statement of the dispatcher's tasks but the projection's (TaskProjection keeps its
 * compare-and-set pair beside its decisions): accepting turns, dedup lookups, reads, the ends the
 * dispatcher decides (cancel, deadlines, retention), and delegation's waits and tree budgets. A
 * change of an existing task runs in a {@link transaction} that first locks its row; several rows
 * of a tree are locked in id order ({@link lockTree}), the projector's batches too, and a
 * transaction that loses a lock race anyway is run again.
 */
export class TaskRepository {
  /** First turns of concurrent requests share one statement and one commit (see {@link insertTurn}). */
  private readonly firstTurns: StatementBatcher<TurnRow, boolean>;

  constructor(private readonly ds: DataSource) {
    this.firstTurns = new StatementBatcher(
      async (rows) =>
        writtenOf(rows, await preparedQuery<{ task_id: string }>(ds, 'dispatcher-insert-turns', INSERT_TURNS, turnsParam(rows))),
      { maxBatch: 256, maxInFlight: 4 },
    );
  }

  /**
   * Runs `work` in one transaction (READ COMMITTED, the server default); rolls back on any error.
   * A transaction Postgres chose as a deadlock's victim (or a serialization failure) is run again
   * from the start, up to {@link LOCK_RACE_ATTEMPTS} times: writers of a tree that race (a cancel
   * and the projector, two cascades) end in one order or the other, never in an error for the
   * caller. `work` must therefore keep its results in what it returns, not in outside state.
   */
  async transaction<T>(work: (tx: TaskTransaction) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transactionOnce(work);
      } catch (err) {
        if (attempt >= LOCK_RACE_ATTEMPTS || !isLockRace(err)) throw err;
      }
    }
  }

  private async transactionOnce<T>(work: (tx: TaskTransaction) => Promise<T>): Promise<T> {
    const q = this.ds.createQueryRunner();
    await q.connect();
    await q.startTransaction();
    try {
      const out = await work(new TaskTransaction(q));
      await q.commitTransaction();
      return out;
    } catch (err) {
      await q.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await q.release();
    }
  }

  /**
   * Writes a turn (see INSERT_TURNS); false when its dedup claim lost to an earlier or concurrent
   * message with the same id, and nothing was written. A first turn goes without `tx`, batched
   * with concurrent requests' into one statement; a later turn goes in the transaction that
   * locked its task, whose row it was computed from.
   */
  async insertTurn(turn: TurnRow, tx?: TaskTransaction): Promise<boolean> {
    if (!tx) {
      if (turn.turn !== FIRST_TURN) throw new Error(`turn ${turn.turn} of task ${turn.task_id} is written under its task's row lock`);
      return this.firstTurns.submit(turn);
    }
    const won: Array<{ task_id: string }> = await tx.runner.query(INSERT_TURNS, turnsParam([turn]));
    return writtenOf([turn], won)[0];
  }

  /** The message `messageId` as first sent to the agent; undefined when it is new. */
  async findDedup(tenant: string, agentId: string, messageId: string, tx?: TaskTransaction): Promise<DedupRecord | undefined> {
    const rows: DedupRecord[] = await (tx?.runner ?? this.ds).query(
      `SELECT content_hash, task_id FROM dispatcher.message_dedup WHERE tenant = $1 AND agent_id = $2 AND message_id = $3`,
      [tenant, agentId, messageId],
    );
    return rows[0];
  }

  /**
   * What a message that starts no follow-up turn was, or would be, answered with, in one read:
   * the task its id was first answered with (`dedup`), and the newest SUBMITTED or WORKING task of
   * the same tenant, agent, context and work hash (`running`).
   */
  async findPriorAnswer(
    tenant: string,
    agentId: string,
    messageId: string,
    contextId: string,
    workHash: string,
  ): Promise<{ dedup?: DedupRecord; running?: { task: Json; turn: number; event_seq: number } }> {
    const rows: Array<{ dedup: DedupRecord | null; running: { task: Json; turn: number; event_seq: number } | null }> = await this.ds.query(
      `SELECT (SELECT jsonb_build_object('content_hash', content_hash, 'task_id', task_id) FROM dispatcher.message_dedup
                WHERE tenant = $1 AND agent_id = $2 AND message_id = $3) AS dedup,
              (SELECT jsonb_build_object('task', task, 'turn', turn, 'event_seq', event_seq) FROM dispatcher.tasks
                WHERE tenant = $1 AND agent_id = $2 AND context_id = $4 AND work_hash = $5
                  AND state IN (${sqlList([TaskStates.submitted, TaskStates.working])})
                ORDER BY created_at DESC LIMIT 1) AS running`,
      [tenant, agentId, messageId, contextId, workHash],
    );
    return { dedup: rows[0]?.dedup ?? undefined, running: rows[0]?.running ?? undefined };
  }

  /**
   * Records that message `messageId` was answered with an existing task (the same work still
   * running), so a retry of it gets that task whatever became of it. False when the id was
   * recorded already (a concurrent twin): nothing is written, and its record stands.
   */
  async recordAnswer(answer: DedupRecord & { tenant: string; agent_id: string; message_id: string; turn: number }): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO dispatcher.message_dedup (tenant, agent_id, message_id, content_hash, task_id, turn)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1`,
      [answer.tenant, answer.agent_id, answer.message_id, answer.content_hash, answer.task_id, answer.turn],
    );
    return rows.length === 1;
  }

  /** A task of `tenant` and `agentId`; undefined for unknown ids and other tenants' tasks. */
  /** A task with the number of the last event its stored state includes. */
  async load(taskId: string, tenant: string, agentId: string): Promise<{ task: Json; eventSeq: number } | undefined> {
    const rows: Array<{ task: Json; event_seq: string }> = await this.ds.query(
      `SELECT task, event_seq FROM dispatcher.tasks WHERE id = $1 AND tenant = $2 AND agent_id = $3`,
      [taskId, tenant, agentId],
    );
    return rows[0] ? { task: rows[0].task, eventSeq: Number(rows[0].event_seq) } : undefined;
  }

  /** A task with, per execution, the seq of the last worker event its stored state includes, in one consistent read. */
  async loadWithProgress(
    taskId: string,
    tenant: string,
    agentId: string,
  ): Promise<{ task: Json; lastSeq: Record<string, number>; eventSeq: number } | undefined> {
    const rows: Array<{ task: Json; last_seq: Record<string, number>; event_seq: string }> = await this.ds.query(
      `SELECT t.task, t.event_seq,
              coalesce(jsonb_object_agg(e.execution_id, e.last_seq) FILTER (WHERE e.execution_id IS NOT NULL), '{}') AS last_seq
         FROM dispatcher.tasks t LEFT JOIN dispatcher.executions e ON e.task_id = t.id
        WHERE t.id = $1 AND t.tenant = $2 AND t.agent_id = $3
        GROUP BY t.id`,
      [taskId, tenant, agentId],
    );
    return rows[0] ? { task: rows[0].task, lastSeq: rows[0].last_seq, eventSeq: Number(rows[0].event_seq) } : undefined;
  }

  /**
   * Up to `limit` stream events of a task after number `after`, in order, with the task's state,
   * its last event number and the oldest one still stored, in one consistent read (undefined: no
   * such task for this tenant and agent).
   */
  async readEvents(taskId: string, tenant: string, agentId: string, after: number, limit: number): Promise<TaskEventPage | undefined> {
    const rows: Array<{ state: string; event_seq: string; oldest: string | null; events: Array<{ seq: string; event: Json }> }> =
      await this.ds.query(
        `SELECT t.state, t.event_seq, (SELECT min(seq) FROM dispatcher.task_events WHERE task_id = t.id) AS oldest,
                coalesce((SELECT jsonb_agg(jsonb_build_object('seq', e.seq, 'event', e.event) ORDER BY e.seq)
                            FROM (SELECT seq, event FROM dispatcher.task_events WHERE task_id = t.id AND seq > $4
                                   ORDER BY seq LIMIT $5) e), '[]') AS events
           FROM dispatcher.tasks t WHERE t.id = $1 AND t.tenant = $2 AND t.agent_id = $3`,
        [taskId, tenant, agentId, after, limit],
      );
    const row = rows[0];
    if (!row) return undefined;
    return {
      state: row.state,
      lastSeq: Number(row.event_seq),
      oldestSeq: row.oldest === null ? undefined : Number(row.oldest),
      events: row.events.map((e) => ({ seq: Number(e.seq), event: e.event })),
    };
  }

  /** Up to `limit` tasks of a ListTasks filter, newest status first, keyset pagination on (status_timestamp, id). */
  async list(query: TaskListQuery): Promise<TaskListPage> {
    const where = ['tenant = $1', 'agent_id = $2'];
    const args: unknown[] = [query.tenant, query.agentId];
    if (query.contextId) {
      args.push(query.contextId);
      where.push(`context_id = $${args.length}`);
    }
    if (query.state) {
      args.push(query.state);
      where.push(`state = $${args.length}`);
    }
    if (query.statusAfter) {
      args.push(query.statusAfter);
      where.push(`status_timestamp > $${args.length}`);
    }
    const filter = where.join(' AND ');
    const [{ total }] = await this.ds.query(`SELECT count(*)::int AS total FROM dispatcher.tasks WHERE ${filter}`, args);
    const pageArgs = [...args];
    let cursor = '';
    if (query.after) {
      pageArgs.push(...query.after);
      cursor = ` AND (status_timestamp, id) < ($${pageArgs.length - 1}::timestamptz, $${pageArgs.length})`;
    }
    pageArgs.push(query.limit, query.maxBytes);
    const limit = `$${pageArgs.length - 1}`;
    const budget = `$${pageArgs.length}`;
    // A page's bytes are bounded, not only its count: rows are shown while the running size of the
    // tasks (as JSON text) stays within the budget — the first always, however large — and the
    // rest come without their task, so a large page is never read into memory nor sent.
    const rows: TaskListPage['rows'] = await this.ds.query(
      `SELECT id, ts, CASE WHEN n = 1 OR running <= ${budget} THEN task END AS task FROM (
         SELECT id, task, ts, row_number() OVER w AS n, sum(octet_length(task::text)) OVER w AS running FROM (
           SELECT id, ${query.withArtifacts ? 'task' : "task - 'artifacts' AS task"}, status_timestamp,
                  to_char(status_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ts
             FROM dispatcher.tasks WHERE ${filter}${cursor} ORDER BY status_timestamp DESC, id DESC LIMIT ${limit}) page
         WINDOW w AS (ORDER BY status_timestamp DESC, id DESC)) sized
       ORDER BY n`,
      pageArgs,
    );
    return { total, rows };
  }

  /** Loads and locks a task of `tenant` (and `agentId` when given); undefined when there is none. */
  async lock(tx: TaskTransaction, taskId: string, tenant: string, agentId?: string): Promise<TaskRow | undefined> {
    const rows: TaskRow[] = await tx.runner.query(
      `SELECT * FROM dispatcher.tasks WHERE id = $1 AND tenant = $2 ${agentId ? 'AND agent_id = $3' : ''} FOR UPDATE`,
      agentId ? [taskId, tenant, agentId] : [taskId, tenant],
    );
    return rows[0];
  }

  /**
   * Locks up to `limit` tasks more than `graceMs` past their deadline while still open, or past
   * their turn's start-by time while still SUBMITTED; rows other replicas hold are skipped.
   */
  async lockOverdue(tx: TaskTransaction, graceMs: number, limit: number): Promise<OverdueRow[]> {
    // One scan (a BitmapOr over the partial indexes tasks_open_deadline_idx and
    // tasks_not_started_idx: the state lists are written out so they apply), so locking re-checks
    // the conditions on a row changed since (a WORKING just projected). Which of the two passed is
    // decided by the database's clock, as the selection was.
    return tx.runner.query(
      `SELECT *, (deadline_at < now() - make_interval(secs => $1::double precision / 1000)) IS TRUE AS past_deadline
       FROM dispatcher.tasks
       WHERE (deadline_at IS NOT NULL AND deadline_at < now() - make_interval(secs => $1::double precision / 1000)
              AND state IN (${sqlList(OPEN_STATE_NAMES)}))
          OR (start_by_at IS NOT NULL AND start_by_at < now() - make_interval(secs => $1::double precision / 1000)
              AND state = '${TaskStates.submitted}')
       ORDER BY LEAST(deadline_at, start_by_at) LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [graceMs, limit],
    );
  }

  /**
   * Stores the end of a locked task's open turn: the task as ended, its execution closed by
   * `endedBy` (a late worker event is then ignored) and a push delivery of the change for each
   * of the task's configs. Returns the closed execution's message id (undefined: no such execution)
   * and the change's number in the task's stream.
   */
  async endTurn(
    tx: TaskTransaction,
    end: {
      task: TaskRow;
      state: string;
      statusTimestamp: Date;
      json: Json;
      executionId: string;
      endedBy: string;
      push: { eventId: string; body: unknown };
    },
  ): Promise<{ messageId?: string; seq: number }> {
    const q = tx.runner;
    // The change is the task's next stream event (its push body is the stream's event), under the row lock.
    const [{ event_seq: seq }] = (
      await q.query(
        `UPDATE dispatcher.tasks SET state = $2, status_timestamp = $3, task = $4, version = version + 1, updated_at = now(),
           event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq`,
        [end.task.id, end.state, end.statusTimestamp, end.json],
        true,
      )
    ).records as Array<{ event_seq: string }>;
    await q.query(`INSERT INTO dispatcher.task_events (task_id, seq, event) VALUES ($1, $2, $3)`, [end.task.id, seq, end.push.body]);
    // Structured: TypeORM answers a bare UPDATE … RETURNING with [rows, count].
    const closed = (
      await q.query(
        `UPDATE dispatcher.executions SET closed = true, ended_by = $2 WHERE execution_id = $1 RETURNING message_id`,
        [end.executionId, end.endedBy],
        true,
      )
    ).records as Array<{ message_id: string }>;
    await q.query(INSERT_TASK_DELIVERIES, [end.push.eventId, end.push.body, end.task.tenant, end.task.id, seq]);
    return { messageId: closed[0]?.message_id, seq: Number(seq) };
  }

  /** Replaces a task's JSON without a state change (metadata), under the row lock `tx` holds. */
  async updateTaskJson(tx: TaskTransaction, taskId: string, task: Json): Promise<void> {
    await tx.runner.query(`UPDATE dispatcher.tasks SET task = $2, version = version + 1, updated_at = now() WHERE id = $1`, [taskId, task]);
  }

  /**
   * Locks a task of `tenant` and `agentId` and every open task below it in its tree, in one
   * statement and in id order — the order every writer of several tasks takes their locks in (the
   * projector's batches too), so ending a tree and projecting its tasks' events never deadlock.
   * Undefined when there is no such task (nothing is locked then).
   */
  async lockTree(
    tx: TaskTransaction,
    taskId: string,
    tenant: string,
    agentId: string,
  ): Promise<{ row: TaskRow; descendants: TaskRow[] } | undefined> {
    const rows: TaskRow[] = await tx.runner.query(
      `SELECT * FROM dispatcher.tasks WHERE tenant = $2 AND (
         (id = $1 AND agent_id = $3)
         OR (state IN (${sqlList(OPEN_STATE_NAMES)})
             AND EXISTS (SELECT 1 FROM dispatcher.tasks r WHERE r.id = $1 AND r.tenant = $2 AND r.agent_id = $3)
             AND id IN ${DESCENDANT_IDS}))
       ORDER BY id FOR UPDATE`,
      [taskId, tenant, agentId],
    );
    const row = rows.find((r) => r.id === taskId);
    if (!row) return undefined;
    // Children created before the locks were granted are in a later read (see lockLiveDescendants).
    const descendants = await this.lockLiveDescendants(
      tx,
      taskId,
      tenant,
      rows.filter((r) => r !== row),
    );
    return { row, descendants };
  }

  /**
   * Every open task delegated, directly or further down, by task `taskId`, locked (each read in id
   * order). Read again until a read finds none not yet locked: a child its parent created after
   * this transaction's first read began shows in the next one, and once every descendant is
   * locked none can be added below it (children are created under their parent's row lock).
   */
  async lockLiveDescendants(tx: TaskTransaction, taskId: string, tenant: string, known: readonly TaskRow[] = []): Promise<TaskRow[]> {
    const locked = [...known];
    for (;;) {
      const rows: TaskRow[] = await tx.runner.query(
        `SELECT * FROM dispatcher.tasks WHERE tenant = $2 AND state IN (${sqlList(OPEN_STATE_NAMES)}) AND NOT (id = ANY($3::text[])) AND id IN ${DESCENDANT_IDS}
         ORDER BY id FOR UPDATE`,
        [taskId, tenant, locked.map((r) => r.id)],
      );
      if (rows.length === 0) return locked;
      locked.push(...rows);
    }
  }

  /** Adds a command to the outbox, sent after `tx` commits. */
  async enqueue(tx: TaskTransaction, c: OutboxCommand): Promise<void> {
    await tx.runner.query(`INSERT INTO dispatcher.outbox (topic, key, headers, value, agent_id) VALUES ($1, $2, $3, $4, $5)`, [
      c.topic,
      c.key,
      c.headers,
      c.value,
      c.agentId,
    ]);
  }

  // --- Delegation: waits of delegating turns, and task trees' budgets -----------------------

  /** Whether the wait of the delegating turn `turn` of `parentTaskId` is recorded (in `tx` when given). */
  async waitRecorded(parentTaskId: string, turn: number, tx?: TaskTransaction): Promise<boolean> {
    const rows: unknown[] = await (tx?.runner ?? this.ds).query(
      `SELECT 1 FROM dispatcher.delegations WHERE parent_task_id = $1 AND turn = $2`,
      [parentTaskId, turn],
    );
    return rows.length > 0;
  }

  /** Records a delegating turn's wait, under its task's row lock. */
  async insertWait(tx: TaskTransaction, wait: DelegationWait & { agent_id: string }): Promise<void> {
    await tx.runner.query(
      `INSERT INTO dispatcher.delegations (parent_task_id, turn, tenant, agent_id, root_task_id, join_mode, deadline_at, children, authority)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        wait.parent_task_id,
        wait.turn,
        wait.tenant,
        wait.agent_id,
        wait.root_task_id,
        wait.join_mode,
        wait.deadline_at,
        JSON.stringify(wait.children),
        JSON.stringify(wait.authority),
      ],
    );
  }

  /** The waits of `parentTaskId` not yet ended, under its row lock. */
  async openWaits(tx: TaskTransaction, parentTaskId: string, tenant: string): Promise<DelegationWait[]> {
    return tx.runner.query(`SELECT * FROM dispatcher.delegations WHERE parent_task_id = $1 AND tenant = $2 AND resumed_at IS NULL`, [
      parentTaskId,
      tenant,
    ]);
  }

  /** Ends the waits of these turns of `parentTaskId`, saying why (`parent-ended`, or how the wait ended). */
  async endWaits(tx: TaskTransaction, parentTaskId: string, turns: number[], reason: string): Promise<void> {
    await tx.runner.query(
      `UPDATE dispatcher.delegations SET resumed_at = now(), reason = $3 WHERE parent_task_id = $1 AND turn = ANY($2::int[])`,
      [parentTaskId, turns, reason],
    );
  }

  /** Replaces a wait's children (a deferred child started or refused), under its parent's row lock. */
  async updateWaitChildren(tx: TaskTransaction, parentTaskId: string, turn: number, children: WaitChild[]): Promise<void> {
    await tx.runner.query(`UPDATE dispatcher.delegations SET children = $3 WHERE parent_task_id = $1 AND turn = $2`, [
      parentTaskId,
      turn,
      JSON.stringify(children),
    ]);
  }

  /** Up to `limit` open waits with children their tenant's admission deferred. */
  async waitsWithDeferred(limit: number): Promise<Array<{ parent_task_id: string; tenant: string }>> {
    return this.ds.query(
      `SELECT d.parent_task_id, d.tenant FROM dispatcher.delegations d
       WHERE d.resumed_at IS NULL AND EXISTS (SELECT 1 FROM jsonb_array_elements(d.children) c WHERE c->>'deferred' IS NOT NULL)
       ORDER BY d.deadline_at LIMIT $1`,
      [limit],
    );
  }

  /** The children of a wait as they stand (state, agent, task JSON), under the parent's lock; rows gone to retention are absent. */
  async childRows(
    tx: TaskTransaction,
    ids: string[],
    tenant: string,
  ): Promise<Array<{ id: string; agent_id: string; state: string; task: { artifacts?: unknown[]; status?: { message?: unknown } } }>> {
    return tx.runner.query(`SELECT id, agent_id, state, task FROM dispatcher.tasks WHERE id = ANY($1::text[]) AND tenant = $2`, [
      ids,
      tenant,
    ]);
  }

  /**
   * Up to `limit` waits that are over but were not ended: deadline passed, parent no longer
   * waiting in that turn, every child settled, or (`first`) one completed.
   */
  async dueWaits(limit: number): Promise<Array<{ parent_task_id: string; tenant: string }>> {
    return this.ds.query(
      `SELECT d.parent_task_id, d.tenant FROM dispatcher.delegations d
       WHERE d.resumed_at IS NULL AND (
         d.deadline_at <= now()
         OR NOT EXISTS (SELECT 1 FROM dispatcher.tasks p WHERE p.id = d.parent_task_id AND p.state = '${TaskStates.working}' AND p.turn = d.turn)
         OR (NOT EXISTS (
               SELECT 1 FROM jsonb_array_elements(d.children) c JOIN dispatcher.tasks t ON t.id = c->>'taskId'
               WHERE c->>'refused' IS NULL AND t.state IN ('${TaskStates.submitted}', '${TaskStates.working}'))
             AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(d.children) c WHERE c->>'deferred' IS NOT NULL))
         OR (d.join_mode = 'first' AND EXISTS (
           SELECT 1 FROM jsonb_array_elements(d.children) c JOIN dispatcher.tasks t ON t.id = c->>'taskId'
           WHERE t.state = '${TaskStates.completed}')))
       ORDER BY d.deadline_at LIMIT $1`,
      [limit],
    );
  }

  /** Delegating turns that ended (execution closed, task WORKING) more than `graceMs` ago with no wait recorded. */
  async unopenedDelegations(graceMs: number, limit: number): Promise<Array<{ id: string; tenant: string; turn: number }>> {
    return this.ds.query(
      `SELECT t.id, t.tenant, t.turn FROM dispatcher.tasks t
       JOIN dispatcher.executions e ON e.task_id = t.id AND e.turn = t.turn AND e.closed
       WHERE t.state = '${TaskStates.working}' AND t.updated_at < now() - make_interval(secs => $1::double precision / 1000)
         AND NOT EXISTS (SELECT 1 FROM dispatcher.delegations d WHERE d.parent_task_id = t.id AND d.turn = t.turn)
       ORDER BY t.updated_at LIMIT $2`,
      [graceMs, limit],
    );
  }

  /** Whether turn `turn` of `taskId` ended with no wait recorded (re-checked under its row lock). */
  async isUnopened(tx: TaskTransaction, taskId: string, turn: number): Promise<boolean> {
    const rows: unknown[] = await tx.runner.query(
      `SELECT 1 FROM dispatcher.executions e WHERE e.task_id = $1 AND e.turn = $2 AND e.closed
         AND NOT EXISTS (SELECT 1 FROM dispatcher.delegations d WHERE d.parent_task_id = $1 AND d.turn = $2)`,
      [taskId, turn],
    );
    return rows.length > 0;
  }

  /** How many waits are open (the in-flight gauge). */
  async openWaitCount(): Promise<number> {
    const [{ n }]: Array<{ n: string }> = await this.ds.query(`SELECT count(*) AS n FROM dispatcher.delegations WHERE resumed_at IS NULL`);
    return Number(n);
  }

  /** Creates a tree's budget row once (its first delegation). */
  async ensureTree(tx: TaskTransaction, rootTaskId: string, tenant: string, budget: number): Promise<void> {
    await tx.runner.query(
      `INSERT INTO dispatcher.task_trees (root_task_id, tenant, budget) VALUES ($1, $2, $3) ON CONFLICT (root_task_id) DO NOTHING`,
      [rootTaskId, tenant, budget],
    );
  }

  /** Records what one execution used of its tree's budget, once per execution id. */
  async recordUsage(tx: TaskTransaction, executionId: string, rootTaskId: string, redeliveries: number, retries: number): Promise<void> {
    await tx.runner.query(
      `INSERT INTO dispatcher.tree_usage (execution_id, root_task_id, redeliveries, retries) VALUES ($1, $2, $3, $4)
       ON CONFLICT (execution_id) DO NOTHING`,
      [executionId, rootTaskId, redeliveries, retries],
    );
  }

  /** The tree's budget and what its executions used; undefined for a tree without a budget row yet. */
  async treeSpending(tx: TaskTransaction, rootTaskId: string): Promise<TreeSpending | undefined> {
    const [r]: Array<{ budget: number; redeliveries: string; retries: string }> = await tx.runner.query(
      `SELECT t.budget, coalesce(sum(u.redeliveries), 0) AS redeliveries, coalesce(sum(u.retries), 0) AS retries
       FROM dispatcher.task_trees t LEFT JOIN dispatcher.tree_usage u ON u.root_task_id = t.root_task_id
       WHERE t.root_task_id = $1 GROUP BY t.budget`,
      [rootTaskId],
    );
    if (!r) return undefined;
    const redeliveries = Number(r.redeliveries);
    const retries = Number(r.retries);
    return { budget: r.budget, redeliveries, retries, left: r.budget - redeliveries - retries };
  }

  /** Marks the tree exhausted; true only for the call that marked it (the first). */
  async markTreeExhausted(tx: TaskTransaction, rootTaskId: string): Promise<boolean> {
    const first = await tx.runner.query(
      `UPDATE dispatcher.task_trees SET exhausted_at = now() WHERE root_task_id = $1 AND exhausted_at IS NULL RETURNING 1`,
      [rootTaskId],
      true,
    );
    return (first.records as unknown[]).length > 0;
  }

  /**
   * Deletes up to `limit` settled (terminal) tasks unchanged for `retentionMs`, with their
   * executions, stream events, message dedup rows, push configs and deliveries; returns how many
   * tasks went.
   * Replicas share the work (SKIP LOCKED).
   */
  async deleteSettled(retentionMs: number, limit: number): Promise<number> {
    return this.transaction(async (tx) => {
      const deleted = await tx.runner.query(
        `WITH old AS (
         SELECT id, tenant, agent_id FROM dispatcher.tasks
          WHERE state IN (${sqlList(TERMINAL_STATE_NAMES)})
            AND updated_at < now() - make_interval(secs => $1::double precision / 1000)
          ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       -- Every message id answered with the task: its turns' and the same-work answers' (message_dedup_task_idx).
       dedup AS (
         DELETE FROM dispatcher.message_dedup m USING old WHERE m.task_id = old.id),
       deliveries AS (
         DELETE FROM dispatcher.push_deliveries p USING old WHERE p.tenant = old.tenant AND p.task_id = old.id),
       -- No foreign keys (migration 1765500000000): a task's executions and stream events go with it here.
       executions AS (
         DELETE FROM dispatcher.executions e USING old WHERE e.task_id = old.id),
       events AS (
         DELETE FROM dispatcher.task_events l USING old WHERE l.task_id = old.id),
       -- A tree's waits and budget go with the task they belong to.
       waits AS (
         DELETE FROM dispatcher.delegations d USING old WHERE d.parent_task_id = old.id),
       trees AS (
         DELETE FROM dispatcher.task_trees r USING old WHERE r.root_task_id = old.id),
       usage AS (
         DELETE FROM dispatcher.tree_usage u USING old WHERE u.root_task_id = old.id)
       DELETE FROM dispatcher.tasks t USING old WHERE t.id = old.id RETURNING t.id`,
        [retentionMs, limit],
        true, // structured: TypeORM answers a bare DELETE … RETURNING with [rows, count]
      );
      return (deleted.records as unknown[]).length;
    });
  }
}
