import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { agentsMigrations, AGENTS_SCHEMA, PostgresExecutionLedger } from '@mesh/agent-runtime';
import { openServiceDatabase } from '@mesh/database';
import type { TaskEvent } from '@mesh/contract';
import { PostgresEffectLedger } from '@mesh/tool-gateway';
import { freshDatabase } from '../support/infra.js';

// A batched update finds its rows by key, whatever the table holds: the planner takes a batch
// (`jsonb_to_recordset`) for 100 rows, and against a table of tens of thousands of rows it
// preferred reading the whole table at every statement (see batchKeys in @mesh/database).

const url = await freshDatabase('ledger-key-lookups');
// The schema as the runtime migrates it; the ledgers then run on one connection (unnamed
// statements, each planned with its values, as the service's connections run them), so that every
// statement runs on the backend whose counters are read (flushed on demand).
await (await openServiceDatabase({ url, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations })).destroy();
const db = new pg.Client({ connectionString: url });

type TableStats = { relname: string; seq_scan: string; n_tup_upd: string };
/** Scans and updates per table of the schema, as counted so far (the backend's own counters flushed first). */
async function stats() {
  await db.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await db.query<TableStats>(`SELECT relname, seq_scan, n_tup_upd FROM pg_stat_user_tables WHERE schemaname = 'agents'`);
  return Object.fromEntries(rows.map((r) => [r.relname, { seqScans: Number(r.seq_scan), updates: Number(r.n_tup_upd) }]));
}

test('renewals, finishes and effect completions of a batch read no table whole', async (t) => {
  await db.connect();
  t.after(() => db.end());
  // What a worker leaves behind after a while: 20,000 finished executions and settled effects.
  await db.query(
    `INSERT INTO agents.executions (execution_id, tenant, agent_id, task_id, context_id, turn, state, owner, lease_until, input_message, finished_at)
     SELECT 'acme:old-' || g || ':1', 'acme', 'echo-agent', 'old-' || g, 'ctx', 1, 'finished', 'w0', now(), '{}', now()
     FROM generate_series(1, 20000) g`,
  );
  await db.query(
    `INSERT INTO agents.tool_effects (idempotency_key, tenant, task_id, execution_id, tool, args_hash, args, side_effect, state, owner, lease_until)
     SELECT 'acme:old-' || g || ':k', 'acme', 'old-' || g, 'acme:old-' || g || ':1', 'mcp__bench__wait', 'h', '{}', false, 'ok', 'w0', now()
     FROM generate_series(1, 20000) g`,
  );
  const executions = new PostgresExecutionLedger(db);
  const effects = new PostgresEffectLedger(db);
  const ids = Array.from({ length: 24 }, (_, i) => `acme:new-${i}:1`);
  const claims = await Promise.all(
    ids.map((executionId, i) =>
      executions.claim(
        {
          executionId,
          tenant: 'acme',
          agentId: 'echo-agent',
          taskId: `new-${i}`,
          contextId: 'ctx',
          turn: 1,
          input: { role: 'user', parts: [] },
        },
        'w1',
        30_000,
      ),
    ),
  );
  assert.ok(claims.every((c) => c.kind === 'claimed'));
  const effectClaims = await Promise.all(
    ids.map((executionId, i) =>
      effects.claim(
        {
          key: `${executionId}:k`,
          tenant: 'acme',
          taskId: `new-${i}`,
          executionId,
          tool: 'mcp__bench__wait',
          argsHash: 'h',
          args: {},
          sideEffect: false,
          owner: 'w1',
        },
        30_000,
      ),
    ),
  );
  assert.ok(effectClaims.every((c) => c.kind === 'claimed'));
  const before = await stats();

  await Promise.all(ids.map((id) => effects.complete(`${id}:k`, 'w1', 'ok', { text: 'done' })));
  assert.deepEqual(new Set(await Promise.all(ids.map((id) => executions.renew(id, 'w1', 30_000)))), new Set(['renewed']));
  const final = { kind: 'task.status', body: { seq: 1, state: 'TASK_STATE_COMPLETED', final: true } } as unknown as TaskEvent;
  assert.ok((await Promise.all(ids.map((id) => executions.finish(id, 'w1', { state: 'completed', events: [final] })))).every(Boolean));

  const settled = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM agents.tool_effects WHERE idempotency_key = ANY ($1) AND state = 'ok'`,
    [ids.map((id) => `${id}:k`)],
  );
  assert.equal(settled.rows[0]!.n, 24);
  const afterwards = await stats();
  assert.equal(afterwards.executions!.updates - before.executions!.updates, 48, 'every renewal and finish counted');
  assert.equal(afterwards.tool_effects!.updates - before.tool_effects!.updates, 24, 'every completion counted');
  assert.equal(afterwards.executions!.seqScans - before.executions!.seqScans, 0, 'executions read whole');
  assert.equal(afterwards.tool_effects!.seqScans - before.tool_effects!.seqScans, 0, 'tool_effects read whole');
});
