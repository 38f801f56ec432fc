import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TaskEvent } from '@mesh/contract';
import type { SqlRunner } from '@mesh/database';
import { inRounds, PostgresExecutionLedger, type ExecutionClaim } from './execution-ledger.js';

interface Row {
  owner: string;
  attempt: number;
  leaseUntil: number;
  state: 'running' | 'finished';
  events: TaskEvent[] | null;
}

/**
 * A stand-in for Postgres that understands the ledger's batched statements (recognised by their
 * text) with Postgres' rules: a statement that would change one row twice fails as Postgres'
 * ON CONFLICT does, and a NUL in a JSON input is refused as jsonb refuses it.
 */
class FakeExecutions implements SqlRunner {
  readonly rows = new Map<string, Row>();
  readonly canceled = new Set<string>();
  readonly statements: string[] = [];

  async query(text: string, params: unknown[] = []): Promise<unknown> {
    const now = Date.now();
    // The batched statements take their items as one JSON document (jsonb_to_recordset).
    const items = (): Array<Record<string, unknown>> => {
      const doc = params[0] as string;
      if (doc.includes('\\u0000')) throw new Error('unsupported Unicode escape sequence');
      return JSON.parse(doc) as Array<Record<string, unknown>>;
    };
    if (text.includes('INSERT INTO agents.executions')) {
      this.statements.push('claim');
      const batch = items();
      const ids = batch.map((b) => b.execution_id as string);
      if (new Set(ids).size !== ids.length) throw new Error('ON CONFLICT DO UPDATE command cannot affect row a second time');
      const out: Array<{ execution_id: string; attempt: number; canceled: boolean }> = [];
      ids.forEach((id, i) => {
        const row = this.rows.get(id);
        const owner = batch[i].owner as string;
        const leaseUntil = now + (batch[i].lease_ms as number);
        if (!row) this.rows.set(id, { owner, attempt: 1, leaseUntil, state: 'running', events: null });
        else if (row.state === 'running' && row.leaseUntil < now) Object.assign(row, { owner, leaseUntil, attempt: row.attempt + 1 });
        else return;
        out.push({ execution_id: id, attempt: this.rows.get(id)!.attempt, canceled: this.canceled.has(id) });
      });
      return out;
    }
    if (text.includes('SELECT execution_id, state, final_events')) {
      this.statements.push('read');
      return (params[0] as string[]).flatMap((id) => {
        const row = this.rows.get(id);
        return row
          ? [{ execution_id: id, state: row.state, final_events: row.events, remaining_ms: Math.max(0, row.leaseUntil - now) }]
          : [];
      });
    }
    if (text.includes('SET lease_until = now() + v.lease_ms')) {
      this.statements.push('renew');
      const out = items().flatMap(({ execution_id: id, owner, lease_ms }) => {
        const row = this.rows.get(id as string);
        if (!row || row.owner !== owner || row.state !== 'running') return [];
        row.leaseUntil = now + (lease_ms as number);
        return [{ execution_id: id, canceled: this.canceled.has(id as string) }];
      });
      return [out, out.length];
    }
    if (text.includes("SET state = 'finished'")) {
      this.statements.push('finish');
      const out = items().flatMap(({ execution_id: id, owner, final_events }) => {
        const row = this.rows.get(id as string);
        if (!row || row.owner !== owner || row.state !== 'running') return [];
        Object.assign(row, { state: 'finished', events: final_events as TaskEvent[] });
        return [{ execution_id: id }];
      });
      return [out, out.length];
    }
    throw new Error(`unexpected statement: ${text}`);
  }
}

const claimOf = (executionId: string, text = 'hi'): ExecutionClaim => ({
  executionId,
  tenant: 'acme',
  agentId: 'echo-agent',
  taskId: `t-${executionId}`,
  contextId: 'c',
  turn: 1,
  input: { role: 'user', parts: [{ type: 'text', text }] },
});

const finalEvent = { kind: 'task.status', body: { seq: 1, final: true } } as unknown as TaskEvent;

test('claims made together go in one statement: new, finished, busy and an expired lease each get their own answer', async () => {
  const db = new FakeExecutions();
  const ledger = new PostgresExecutionLedger(db);
  db.rows.set('done', { owner: 'w0', attempt: 1, leaseUntil: 0, state: 'finished', events: [finalEvent] });
  db.rows.set('busy', { owner: 'w0', attempt: 1, leaseUntil: Date.now() + 60_000, state: 'running', events: null });
  db.rows.set('expired', { owner: 'w0', attempt: 1, leaseUntil: Date.now() - 1, state: 'running', events: null });

  const [fresh, done, busy, expired] = await Promise.all(
    ['new', 'done', 'busy', 'expired'].map((id) => ledger.claim(claimOf(id), 'w1', 30_000)),
  );

  assert.deepEqual(fresh, { kind: 'claimed', attempt: 1, canceled: false });
  assert.deepEqual(done, { kind: 'finished', events: [finalEvent] });
  assert.equal(busy.kind, 'busy');
  assert.ok(busy.kind === 'busy' && busy.leaseRemainingMs > 50_000);
  assert.deepEqual(expired, { kind: 'claimed', attempt: 2, canceled: false }, 'a takeover counts an attempt');
  assert.equal(db.rows.get('expired')?.owner, 'w1');
  assert.deepEqual(db.statements, ['claim', 'read'], 'one claim statement and one read of the rows it did not claim');
});

test('an execution id twice in one batch: the first claim wins, the second finds it busy (a later statement)', async () => {
  const db = new FakeExecutions();
  const ledger = new PostgresExecutionLedger(db);
  const [a, b, other] = await Promise.all([
    ledger.claim(claimOf('dup'), 'w1/a', 30_000),
    ledger.claim(claimOf('dup'), 'w1/b', 30_000),
    ledger.claim(claimOf('other'), 'w1/c', 30_000),
  ]);
  assert.deepEqual(a, { kind: 'claimed', attempt: 1, canceled: false });
  assert.equal(b.kind, 'busy');
  assert.deepEqual(other, { kind: 'claimed', attempt: 1, canceled: false });
  assert.equal(db.rows.get('dup')?.owner, 'w1/a');
  assert.deepEqual(db.statements, ['claim', 'claim', 'read'], 'the duplicate went in a second round, never with itself');
});

test('an item the database refuses fails only its own caller; the others of its batch are claimed', async () => {
  const db = new FakeExecutions();
  const ledger = new PostgresExecutionLedger(db);
  const results = await Promise.allSettled([
    ledger.claim(claimOf('ok-1'), 'w1', 30_000),
    ledger.claim(claimOf('bad', 'nul \u0000 inside'), 'w1', 30_000),
    ledger.claim(claimOf('ok-2'), 'w1', 30_000),
  ]);
  assert.equal(results[0].status, 'fulfilled');
  assert.equal(results[2].status, 'fulfilled');
  assert.equal(results[1].status, 'rejected');
  assert.match(String((results[1] as PromiseRejectedResult).reason), /Unicode/);
  assert.ok(db.rows.has('ok-1') && db.rows.has('ok-2') && !db.rows.has('bad'));
});

test('renewals made together go in one statement: renewed, lost to another owner, and canceled', async () => {
  const db = new FakeExecutions();
  const ledger = new PostgresExecutionLedger(db);
  await Promise.all(['mine', 'taken', 'canceled'].map((id) => ledger.claim(claimOf(id), 'w1', 30_000)));
  db.rows.get('taken')!.owner = 'w2';
  db.canceled.add('canceled');
  db.statements.length = 0;
  const out = await Promise.all(['mine', 'taken', 'canceled', 'never-claimed'].map((id) => ledger.renew(id, 'w1', 30_000)));
  assert.deepEqual(out, ['renewed', 'lost', 'canceled', 'lost']);
  assert.deepEqual(db.statements, ['renew']);
});

test("finishes made together go in one statement; one whose owner lost the execution is refused, the others' events recorded", async () => {
  const db = new FakeExecutions();
  const ledger = new PostgresExecutionLedger(db);
  await Promise.all(['a', 'b'].map((id) => ledger.claim(claimOf(id), 'w1', 30_000)));
  db.rows.get('b')!.owner = 'w2';
  db.statements.length = 0;
  const out = await Promise.all(['a', 'b'].map((id) => ledger.finish(id, 'w1', { state: 'completed', events: [finalEvent] })));
  assert.deepEqual(out, [true, false]);
  assert.deepEqual(db.statements, ['finish']);
  assert.deepEqual(db.rows.get('a')?.events, [finalEvent]);
  assert.equal(db.rows.get('b')?.state, 'running');
});

test('inRounds keeps the order of results and never puts one key twice in a round', async () => {
  const rounds: string[][] = [];
  const out = await inRounds(
    ['a', 'b', 'a', 'c', 'a', 'b'],
    (x) => x,
    async (round) => {
      rounds.push(round);
      return round.map((x) => `${x}${rounds.length}`);
    },
  );
  assert.deepEqual(rounds, [['a', 'b', 'c'], ['a', 'b'], ['a']]);
  assert.deepEqual(
    out.map((o) => (o.ok ? o.value : 'error')),
    ['a1', 'b1', 'a2', 'c1', 'a3', 'b2'],
  );
});

test('inRounds: a failing round is run item by item, and the next round (a duplicate of a good item) still comes after it', async () => {
  const calls: string[][] = [];
  const out = await inRounds(
    ['bad', 'dup', 'dup'],
    (x) => x,
    async (round) => {
      calls.push(round);
      if (round.includes('bad')) throw new Error('refused');
      return round.map((x) => `${x}:${calls.length}`);
    },
  );
  assert.deepEqual(calls, [['bad', 'dup'], ['bad'], ['dup'], ['dup']]);
  assert.equal(out[0].ok, false);
  assert.deepEqual(out.slice(1), [
    { ok: true, value: 'dup:3' },
    { ok: true, value: 'dup:4' },
  ]);
});

test('a refused item in a batch with a duplicate id: the duplicate still finds the first claim', async () => {
  const db = new FakeExecutions();
  const ledger = new PostgresExecutionLedger(db);
  const results = await Promise.allSettled([
    ledger.claim(claimOf('bad', 'nul \u0000 inside'), 'w1/a', 30_000),
    ledger.claim(claimOf('dup'), 'w1/b', 30_000),
    ledger.claim(claimOf('dup'), 'w1/c', 30_000),
  ]);
  assert.equal(results[0].status, 'rejected');
  assert.deepEqual((results[1] as PromiseFulfilledResult<unknown>).value, { kind: 'claimed', attempt: 1, canceled: false });
  assert.equal((results[2] as PromiseFulfilledResult<{ kind: string }>).value.kind, 'busy');
  assert.equal(db.rows.get('dup')?.owner, 'w1/b');
});
