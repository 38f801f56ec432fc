import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { agentsMigrations, AGENTS_SCHEMA, PostgresExecutionLedger, type ExecutionClaim } from '@mesh/agent-runtime';
import { openServiceDatabase } from '@mesh/database';
import type { TaskEvent } from '@mesh/contract';
import { freshDatabase, sql } from '../support/infra.js';

const db = await freshDatabase('execution-ledger');
const ds = await openServiceDatabase({ url: db, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations });
after(() => ds.destroy());
const ledger = new PostgresExecutionLedger(ds);

const claimOf = (executionId: string, text = 'hi'): ExecutionClaim => ({
  executionId,
  tenant: 'acme',
  agentId: 'echo-agent',
  taskId: `task-${executionId}`,
  contextId: 'ctx',
  turn: 1,
  input: { role: 'user', parts: [{ type: 'text', text }] },
});
const finalEvent = { kind: 'task.status', body: { seq: 1, state: 'TASK_STATE_COMPLETED', final: true } } as unknown as TaskEvent;

test('one batch of claims against Postgres: new, finished, busy, expired lease, a duplicate id and a refused input', async () => {
  // Set up: a finished execution, a running one with a live lease, and one whose lease expired.
  for (const id of ['b-done', 'b-busy', 'b-expired']) assert.equal((await ledger.claim(claimOf(id), 'w0', 60_000)).kind, 'claimed');
  assert.ok(await ledger.finish('b-done', 'w0', { state: 'completed', events: [finalEvent] }));
  await sql(db, `UPDATE agents.executions SET lease_until = now() - interval '1 second' WHERE execution_id = 'b-expired'`);

  const results = await Promise.allSettled([
    ledger.claim(claimOf('b-new'), 'w1/a', 30_000),
    ledger.claim(claimOf('b-done'), 'w1/b', 30_000),
    ledger.claim(claimOf('b-busy'), 'w1/c', 30_000),
    ledger.claim(claimOf('b-expired'), 'w1/d', 30_000),
    ledger.claim(claimOf('b-dup'), 'w1/e', 30_000),
    ledger.claim(claimOf('b-dup'), 'w1/f', 30_000),
    // jsonb refuses a NUL character: this claim fails, the others of its batch do not.
    ledger.claim(claimOf('b-bad', 'nul \u0000 inside'), 'w1/g', 30_000),
  ]);
  const value = (i: number) => (results[i] as PromiseFulfilledResult<unknown>).value;
  assert.deepEqual(value(0), { kind: 'claimed', attempt: 1, canceled: false });
  assert.deepEqual(value(1), { kind: 'finished', events: [finalEvent] });
  assert.equal((value(2) as { kind: string }).kind, 'busy');
  assert.deepEqual(value(3), { kind: 'claimed', attempt: 2, canceled: false }, 'the expired lease was taken over');
  assert.deepEqual(value(4), { kind: 'claimed', attempt: 1, canceled: false });
  assert.equal((value(5) as { kind: string }).kind, 'busy', 'the same id twice: the second claim finds the first');
  assert.equal(results[6].status, 'rejected');

  const owners = await sql<{ execution_id: string; owner: string }>(
    db,
    `SELECT execution_id, owner FROM agents.executions WHERE execution_id LIKE 'b-%' ORDER BY execution_id`,
  );
  assert.deepEqual(
    Object.fromEntries(owners.map((r) => [r.execution_id, r.owner])),
    { 'b-busy': 'w0', 'b-done': 'w0', 'b-dup': 'w1/e', 'b-expired': 'w1/d', 'b-new': 'w1/a' },
    'no row for the refused claim',
  );
});

test('batched renewals and finishes against Postgres: canceled, lost, and a finish by a former owner refused', async () => {
  for (const id of ['r-mine', 'r-canceled', 'r-taken']) await ledger.claim(claimOf(id), 'w1', 30_000);
  await ledger.cancel({ executionId: 'r-canceled', tenant: 'acme', taskId: 'task-r-canceled' });
  await sql(db, `UPDATE agents.executions SET owner = 'w2' WHERE execution_id = 'r-taken'`);

  const renewals = await Promise.all(['r-mine', 'r-canceled', 'r-taken'].map((id) => ledger.renew(id, 'w1', 30_000)));
  assert.deepEqual(renewals, ['renewed', 'canceled', 'lost']);

  const reply = { role: 'agent' as const, parts: [{ type: 'text' as const, text: 'done "quoted" \\ back' }] };
  const finished = await Promise.all([
    ledger.finish('r-mine', 'w1', { state: 'completed', reply, events: [finalEvent] }),
    ledger.finish('r-taken', 'w1', { state: 'completed', events: [] }),
  ]);
  assert.deepEqual(finished, [true, false]);
  const [row] = await sql<{ state: string; final_state: string; reply_message: unknown; final_events: unknown }>(
    db,
    `SELECT state, final_state, reply_message, final_events FROM agents.executions WHERE execution_id = 'r-mine'`,
  );
  assert.deepEqual(row, { state: 'finished', final_state: 'completed', reply_message: reply, final_events: [finalEvent] });
  assert.deepEqual(await ledger.claim(claimOf('r-mine'), 'w3', 30_000), { kind: 'finished', events: [finalEvent] });
  assert.deepEqual(await ledger.history('acme', 'task-r-mine', 2), [claimOf('r-mine').input, reply]);
});

test('two ledgers (two workers) claiming the same executions in one batch each: every execution has exactly one owner', async () => {
  const other = new PostgresExecutionLedger(ds);
  const ids = Array.from({ length: 200 }, (_, i) => `race-${i}`);
  const [mine, theirs] = await Promise.all([
    Promise.all(ids.map((id) => ledger.claim(claimOf(id), 'wa', 30_000))),
    Promise.all([...ids].reverse().map((id) => other.claim(claimOf(id), 'wb', 30_000))),
  ]);
  theirs.reverse();
  ids.forEach((id, i) => {
    const kinds = [mine[i].kind, theirs[i].kind].sort();
    assert.deepEqual(kinds, ['busy', 'claimed'], `${id}: one claim wins, the other finds it busy`);
  });
});
