import { test } from 'node:test';
import assert from 'node:assert/strict';
import { preparedQuery, rowsOf, type SqlRunner } from './prepared-query.js';

test('rowsOf unwraps what TypeORM and pg return', () => {
  const rows = [{ id: 'a' }, { id: 'b' }];
  assert.deepEqual(rowsOf(rows), rows);
  assert.deepEqual(rowsOf([rows, 2]), rows, "TypeORM's [rows, count] for UPDATE/DELETE");
  assert.deepEqual(rowsOf({ rows }), rows, "pg's result");
  assert.deepEqual(rowsOf([[1, 2], 'x']), [[1, 2], 'x'], 'a two-element array that is not [rows, count] is rows');
  assert.deepEqual(rowsOf(undefined), []);
  assert.deepEqual(rowsOf('nothing'), []);
});

/** A pg pool stand-in: one connection, what it was sent, whether it was released (and with what). */
function fakePool(replanAfterMs: number, fail?: Error) {
  const sent: unknown[] = [];
  const released: Array<Error | undefined> = [];
  const client = {
    query: async (q: unknown) => {
      sent.push(q);
      if (fail && typeof q !== 'string') throw fail;
      return { rows: typeof q === 'string' ? [] : [{ n: 1 }] };
    },
    release: (err?: Error) => void released.push(err),
  };
  const ds = {
    driver: { master: { connect: async () => client, options: { replanAfterMs } } },
    query: async () => assert.fail('the pool, not the data source, runs a prepared statement'),
  };
  return { ds, sent, released };
}

test('preparedQuery names the statement on a connection of the data source pool', async () => {
  const { ds, sent, released } = fakePool(60_000);
  assert.deepEqual(await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [1]), [{ n: 1 }]);
  assert.deepEqual(await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [2]), [{ n: 1 }]);
  assert.deepEqual(sent, [
    { name: 'count-things', text: 'SELECT $1::int AS n', values: [1] },
    { name: 'count-things', text: 'SELECT $1::int AS n', values: [2] },
  ]);
  assert.deepEqual(released, [undefined, undefined]);
});

test("preparedQuery drops a connection's cached plans once they are older than replanAfterMs", async () => {
  const { ds, sent } = fakePool(30);
  await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [1]);
  await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [2]);
  await new Promise((r) => setTimeout(r, 40));
  await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [3]);
  await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [4]);
  assert.deepEqual(
    sent.map((q) => (typeof q === 'string' ? q : (q as { values: number[] }).values[0])),
    [1, 2, 'DISCARD PLANS', 3, 4],
  );
});

test("preparedQuery closes a connection whose statement failed, as pg's pool.query does", async () => {
  const refused = new Error('duplicate key');
  const { ds, released } = fakePool(60_000, refused);
  await assert.rejects(preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [1]), refused);
  assert.deepEqual(released, [refused]);
});

test('preparedQuery on a runner without a pool runs the text as a plain query', async () => {
  const sent: unknown[] = [];
  const runner: SqlRunner = { query: async (text, params) => (sent.push([text, params]), [[{ n: 2 }], 1]) };
  assert.deepEqual(await preparedQuery(runner, 'count-things', 'UPDATE t SET n = $1 RETURNING n', [2]), [{ n: 2 }]);
  assert.deepEqual(sent, [['UPDATE t SET n = $1 RETURNING n', [2]]]);
});
