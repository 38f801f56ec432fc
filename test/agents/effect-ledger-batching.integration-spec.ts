import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '@mesh/contract';
import { openServiceDatabase } from '@mesh/database';
import { agentsMigrations, AGENTS_SCHEMA } from '@mesh/agent-runtime';
import { PostgresEffectLedger } from '@mesh/tool-gateway';
import { freshDatabase } from '../support/infra.js';

// The effect ledger's claims and completions of calls running at once are group committed: one
// statement for many calls, each call still answered for its own row.

const url = await freshDatabase('effect-ledger-batching');
const ds = await openServiceDatabase({ url, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations, poolSize: 4 });
after(() => ds.destroy());

/** The data source, counting the statements sent through it. */
function counting() {
  const sent: string[] = [];
  return {
    sent,
    query: (text: string, params?: unknown[]) => {
      sent.push(text.trim().split(/\s+/)[0]!);
      return ds.query(text, params);
    },
  };
}

const effect = (key: string, sideEffect = true, owner = 'w1#a') => ({
  key,
  tenant: 'acme',
  taskId: `t-${key}`,
  executionId: `acme:t-${key}:1`,
  tool: 'mcp__billing__issue_refund',
  argsHash: 'h',
  args: { key, quote: `it's "quoted"` },
  sideEffect,
  owner,
});

test('claims and completions of calls at once go as one statement each, every row as if alone', async () => {
  const sql = counting();
  const ledger = new PostgresEffectLedger(sql);
  const keys = Array.from({ length: 50 }, () => newId());
  const claims = await Promise.all(keys.map((k) => ledger.claim(effect(k), 30_000)));
  assert.deepEqual(
    claims.map((c) => c.kind),
    Array(50).fill('claimed'),
  );
  assert.equal(sql.sent.filter((s) => s === 'INSERT').length, 1, 'one claim statement for the 50 calls');
  await Promise.all(keys.map((k, i) => ledger.complete(k, 'w1#a', i % 2 ? 'error' : 'ok', { text: `r${i}` })));
  assert.equal(sql.sent.filter((s) => s === 'UPDATE').length, 1, 'one completion statement');
  for (const [i, k] of keys.entries()) {
    const e = await ledger.get(k);
    assert.equal(e?.state, i % 2 ? 'error' : 'ok');
    assert.equal(e?.result?.text, `r${i}`);
    assert.deepEqual(e?.args, { key: k, quote: `it's "quoted"` });
  }
  // Recorded rows are found again, also in a batch: no second claim.
  const again = await Promise.all(keys.slice(0, 3).map((k) => ledger.claim(effect(k), 30_000)));
  assert.deepEqual(
    again.map((c) => c.kind),
    ['recorded', 'recorded', 'recorded'],
  );
});

test('the same call twice in one batch: one claims it, the other finds it busy', async () => {
  const ledger = new PostgresEffectLedger(counting());
  const key = newId();
  const [a, b] = await Promise.all([ledger.claim(effect(key), 30_000), ledger.claim(effect(key), 30_000)]);
  assert.deepEqual([a.kind, b.kind].sort(), ['busy', 'claimed']);
});

test('a completion by someone who is not the owner does not touch the row, also inside a batch', async () => {
  const ledger = new PostgresEffectLedger(counting());
  const [mine, theirs] = [newId(), newId()];
  await Promise.all([ledger.claim(effect(mine), 30_000), ledger.claim(effect(theirs, true, 'w2#b'), 30_000)]);
  await Promise.all([ledger.complete(mine, 'w1#a', 'ok', { text: 'mine' }), ledger.complete(theirs, 'w1#a', 'ok', { text: 'not mine' })]);
  assert.equal((await ledger.get(mine))?.state, 'ok');
  assert.equal((await ledger.get(theirs))?.state, 'pending');
});

test('a call Postgres refuses (a NUL in its args) fails alone; the batch it came in is claimed', async () => {
  const sql = counting();
  const ledger = new PostgresEffectLedger(sql);
  const keys = Array.from({ length: 5 }, () => newId());
  const bad = { ...effect(keys[2]), args: { note: 'nul \u0000 inside' } };
  const results = await Promise.allSettled(keys.map((k, i) => ledger.claim(i === 2 ? bad : effect(k), 30_000)));
  assert.equal(results[2].status, 'rejected');
  assert.match(String((results[2] as PromiseRejectedResult).reason), /\\u0000|Unicode/);
  for (const i of [0, 1, 3, 4]) assert.deepEqual(results[i], { status: 'fulfilled', value: { kind: 'claimed' } });
  assert.equal(await ledger.get(keys[2]), undefined, 'nothing half-written for the refused call');
  for (const i of [0, 1, 3, 4]) assert.equal((await ledger.get(keys[i]))?.state, 'pending');
});
