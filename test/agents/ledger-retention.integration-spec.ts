import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  agentsMigrations,
  AGENTS_SCHEMA,
  LedgerRetention,
  loadAgentsConfig,
  PostgresExecutionLedger,
  startAgents,
} from '@mesh/agent-runtime';
import { sampleAgents } from '@mesh/app-agents';
import { openServiceDatabase } from '@mesh/database';
import { executionId, TopicNames } from '@mesh/contract';
import { eventually, freshDatabase, sql, testRun, uniquePrefix } from '../support/infra.js';

const db = await freshDatabase('ledger-retention');
const ds = await openServiceDatabase({ url: db, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations });
after(() => ds.destroy());
const ledger = new PostgresExecutionLedger(ds);

/** One turn of `taskId`, claimed and (unless `running`) finished with `state`. */
async function turn(taskId: string, turnNo: number, state: string | 'running'): Promise<void> {
  const id = executionId('acme', taskId, turnNo);
  const c = await ledger.claim(
    { executionId: id, tenant: 'acme', agentId: 'refund-agent', taskId, contextId: 'c', turn: turnNo, input: { role: 'user', parts: [] } },
    'w1',
    60_000,
  );
  assert.equal(c.kind, 'claimed');
  if (state !== 'running') assert.ok(await ledger.finish(id, 'w1', { state, events: [] }));
}

async function effect(taskId: string, state: string): Promise<void> {
  await sql(
    db,
    `INSERT INTO agents.tool_effects (idempotency_key, tenant, task_id, execution_id, tool, args_hash, args, side_effect, state, owner, lease_until)
     VALUES ($1, 'acme', $2, $3, 'mcp__billing__issue_refund', 'h', '{}', true, $4, 'w1', now())`,
    [`acme:${taskId}:mcp__billing__issue_refund:${state}`, taskId, executionId('acme', taskId, 1), state],
  );
}

const count = async (table: string, taskId: string) =>
  (await sql<{ n: number }>(db, `SELECT count(*)::int AS n FROM agents.${table} WHERE task_id = $1`, [taskId]))[0].n;

test("a settled task's ledger rows go together after the retention; what could still be needed stays", async () => {
  // Settled: executions, effect and cancel go.
  await turn('t-done', 1, 'input-required');
  await turn('t-done', 2, 'completed');
  await effect('t-done', 'ok');
  await ledger.cancel({ executionId: executionId('acme', 't-done', 2), tenant: 'acme', taskId: 't-done' });
  // Waiting for input: may be continued, its effects must still dedup a later turn's call.
  await turn('t-waiting', 1, 'input-required');
  await effect('t-waiting', 'ok');
  // Settled, but an unknown side effect waits for the reconciler.
  await turn('t-unknown', 1, 'failed');
  await effect('t-unknown', 'unknown');
  // An earlier turn settled, a later one still running.
  await turn('t-running', 1, 'input-required');
  await turn('t-running', 2, 'running');
  // A cancel whose run never came.
  await ledger.cancel({ executionId: executionId('acme', 't-never-ran', 1), tenant: 'acme', taskId: 't-never-ran' });

  const long = new LedgerRetention(ds, { retentionMs: 3_600_000, sweepMs: 60_000 });
  assert.deepEqual(await long.sweep(), { tasks: 0, executions: 0, effects: 0, cancellations: 0 }, 'nothing is older than an hour');

  await new Promise((r) => setTimeout(r, 20));
  // One task per statement: the sweep repeats while batches come back full.
  const short = new LedgerRetention(ds, { retentionMs: 10, sweepMs: 60_000, batch: 1 });
  assert.deepEqual(await short.sweep(), { tasks: 1, executions: 2, effects: 1, cancellations: 2 });
  for (const table of ['executions', 'tool_effects', 'cancellations']) assert.equal(await count(table, 't-done'), 0, table);
  assert.equal(await count('cancellations', 't-never-ran'), 0);
  assert.equal(await count('executions', 't-waiting'), 1);
  assert.equal(await count('tool_effects', 't-waiting'), 1);
  assert.equal(await count('executions', 't-unknown'), 1);
  assert.equal(await count('tool_effects', 't-unknown'), 1);
  assert.equal(await count('executions', 't-running'), 2);
});

test('the agents refuse to start when a command topic keeps records as long as the ledger: a redelivery would run again', async () => {
  const prefix = uniquePrefix('ledger-retention');
  const config = loadAgentsConfig({
    KAFKA_BROKERS: testRun().brokers.join(','),
    TOPIC_PREFIX: prefix,
    DATABASE_URL: db,
    AGENTS_RUN: 'echo-agent',
    // The test broker keeps records 24 h.
    AGENTS_LEDGER_RETENTION_MS: '3600000',
  });
  const connections = async () =>
    Number(
      (
        await sql<{ n: string }>(
          db,
          'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        )
      )[0]!.n,
    );
  const before = await connections();
  await assert.rejects(startAgents({ ...config, AGENTS_PORT: 0 }, sampleAgents), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'CONFIG_INVALID');
    assert.match(
      err.message,
      new RegExp(`AGENTS_LEDGER_RETENTION_MS \\(3600000 ms\\).*${new TopicNames(prefix).commands('echo-agent')}.*86400000 ms`),
    );
    return true;
  });
  // The failed start closed what it had opened (an abandoned pool would drop idle connections only after a minute).
  await eventually('the failed start closed its database connections', async () => (await connections()) <= before, 3000);
});
