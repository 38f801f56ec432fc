// A Postgres connection that dies while a pool client is checked out and nobody listens on it yet
// (the moment between pg-pool handing a new client over and TypeORM attaching its listener; a
// Postgres restart sends FATAL 57P01 to every backend) must not end the service: the client is
// dropped and the next query gets a fresh connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { serviceDataSource } from '@mesh/database';
import { eventually, freshDatabase, sql } from '../support/infra.js';

test('a FATAL on a checked-out pool client with no listener of its own leaves the process running', async () => {
  const url = await freshDatabase('client-errors');
  const ds = serviceDataSource({ url, schema: 'guard', entities: [], migrations: [] });
  await ds.initialize();
  try {
    const pool = (ds.driver as unknown as { master: pg.Pool }).master;
    // As pg-pool hands a client over: its idle listener removed, the caller's not attached yet.
    const client = await pool.connect();
    let released = false;
    try {
      assert.equal(client.listenerCount('error'), 1, 'only the guard listens');
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Without the guard the 'error' event of this FATAL ends the test process.
      await sql(url, 'SELECT pg_terminate_backend($1)', [rows[0].pid]);
      await eventually('the client saw its backend end', () => (client as unknown as { _queryable: boolean })._queryable === false);
      await assert.rejects(client.query('SELECT 1'));
      client.release(new Error('backend terminated'));
      released = true;
    } finally {
      if (!released) client.release(new Error('test failed'));
    }
    assert.deepEqual(await ds.query('SELECT 1 AS one'), [{ one: 1 }], 'the next query gets a fresh connection');
  } finally {
    await ds.destroy();
  }
});
