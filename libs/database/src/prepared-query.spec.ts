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

test('preparedQuery names the statement on the data source pool', async () => {
  const sent: unknown[] = [];
  const ds = {
    driver: { master: { query: async (q: unknown) => (sent.push(q), { rows: [{ n: 1 }] }) } },
    query: async () => assert.fail('the pool, not the data source, runs a prepared statement'),
  };
  assert.deepEqual(await preparedQuery(ds, 'count-things', 'SELECT $1::int AS n', [1]), [{ n: 1 }]);
  assert.deepEqual(sent, [{ name: 'count-things', text: 'SELECT $1::int AS n', values: [1] }]);
});

test('preparedQuery on a runner without a pool runs the text as a plain query', async () => {
  const sent: unknown[] = [];
  const runner: SqlRunner = { query: async (text, params) => (sent.push([text, params]), [[{ n: 2 }], 1]) };
  assert.deepEqual(await preparedQuery(runner, 'count-things', 'UPDATE t SET n = $1 RETURNING n', [2]), [{ n: 2 }]);
  assert.deepEqual(sent, [['UPDATE t SET n = $1 RETURNING n', [2]]]);
});
