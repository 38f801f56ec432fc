// A batched statement prepared by name (the dispatcher's accept and projection) reuses the plan
// Postgres cached for it only for a while (preparedQuery's replanAfterMs): a plan cached while the
// table was small would go on reading the whole table as it grows, until an ANALYZE that a busy or
// autovacuum-less database may not run for a long time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { preparedQuery, serviceDataSource } from '@mesh/database';
import { freshDatabase } from '../support/infra.js';

const UPDATE = {
  name: 'plans-touch',
  text: `UPDATE plans.items x SET n = x.n + 1 FROM jsonb_to_recordset($1::jsonb) AS v(id text) WHERE x.id = v.id`,
};
const ids = (from: number, count: number) => JSON.stringify(Array.from({ length: count }, (_, i) => ({ id: `item-${from + i}` })));

type Query = (text: string, values?: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** The plan the connection's next execution of the named statement would use. */
async function planOfNext(query: Query): Promise<string> {
  // EXPLAIN EXECUTE takes no bind parameters: the (generated, quote-free) batch is inlined.
  const rows = await query(`EXPLAIN EXECUTE "${UPDATE.name}"('${ids(40000, 10)}')`);
  return rows.map((r) => String(r['QUERY PLAN'])).join('\n');
}

/**
 * Runs the named statement on one connection while the table is small, grows the table (no
 * ANALYZE), runs `afterGrowth`, and returns the plan of its next execution on that connection.
 */
async function planAfterGrowth(
  query: Query,
  named: (values: unknown[]) => Promise<unknown>,
  afterGrowth: () => Promise<void> = async () => undefined,
) {
  await query('CREATE SCHEMA IF NOT EXISTS plans');
  await query('DROP TABLE IF EXISTS plans.items');
  await query('CREATE TABLE plans.items (id text PRIMARY KEY, n int NOT NULL DEFAULT 0)');
  await query(`INSERT INTO plans.items (id) SELECT 'item-' || g FROM generate_series(0, 99) g`);
  for (let i = 0; i < 8; i++) await named([ids(i * 10, 10)]);
  await query(`INSERT INTO plans.items (id) SELECT 'item-' || g FROM generate_series(100, 49999) g`);
  await afterGrowth();
  return planOfNext(query);
}

test('a service connection plans a named statement anew for the table as it is now', async () => {
  const url = await freshDatabase('prepared-plans');
  const replanAfterMs = 300;
  const ds = serviceDataSource({ url, schema: 'plans', entities: [], migrations: [], poolSize: 1, replanAfterMs });
  await ds.initialize();
  try {
    const run = (values: unknown[]) => preparedQuery(ds, UPDATE.name, UPDATE.text, values);
    const query: Query = (text, values) => ds.query(text, values);
    const plan = await planAfterGrowth(query, run, async () => {
      // Cached: the plan Postgres settled on while the table was small is still used.
      assert.match(await planOfNext(query), /Seq Scan on items/);
      // Older than replanAfterMs: the next executions plan for 50,000 rows (from the sixth on, generic).
      await new Promise((r) => setTimeout(r, replanAfterMs + 50));
      for (let i = 0; i < 8; i++) await run([ids(1000 + i * 10, 10)]);
    });
    assert.match(plan, /Index Scan using items_pkey/, plan);
    assert.doesNotMatch(plan, /Seq Scan on items/, plan);
  } finally {
    await ds.destroy();
  }
});

test('without it, Postgres keeps the plan it cached while the table was small', async () => {
  // The hazard the service setting exists for: if this stops failing on a future Postgres, the
  // setting may be unnecessary there.
  const url = await freshDatabase('prepared-plans-default');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const plan = await planAfterGrowth(
      async (text, values) => (await client.query(text, values)).rows,
      (values) => client.query({ ...UPDATE, values }),
    );
    assert.match(plan, /Seq Scan on items/, plan);
  } finally {
    await client.end();
  }
});

test('options given in the database URL are kept', async () => {
  const url = new URL(await freshDatabase('prepared-plans-options'));
  url.searchParams.set('options', '-c statement_timeout=4321');
  const ds = serviceDataSource({ url: url.toString(), schema: 'plans', entities: [], migrations: [], poolSize: 1 });
  await ds.initialize();
  try {
    assert.deepEqual(await ds.query('SHOW statement_timeout'), [{ statement_timeout: '4321ms' }]);
  } finally {
    await ds.destroy();
  }
});
