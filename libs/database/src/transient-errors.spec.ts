import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError } from '@mesh/contract';
import { isTransientPostgresError } from './transient-errors.js';

test('Postgres unreachable or restarting is transient; a failure of the statement is not', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const adminShutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
  const typeorm = Object.assign(new Error('Query failed'), { driverError: adminShutdown });
  assert.ok(isTransientPostgresError(refused));
  assert.ok(isTransientPostgresError(new Error('Connection terminated unexpectedly')));
  assert.ok(isTransientPostgresError(typeorm));
  assert.ok(isTransientPostgresError(new AggregateError([refused], 'connect failed')));
  assert.ok(isTransientPostgresError(new MeshError('UNAVAILABLE', 'projection failed', { cause: refused })));

  assert.ok(!isTransientPostgresError(new Error('always fails')));
  assert.ok(!isTransientPostgresError(Object.assign(new Error('duplicate key'), { code: '23505' })));
  assert.ok(!isTransientPostgresError(Object.assign(new Error('broker down'), { name: 'KafkaJSConnectionError' })));
  assert.ok(!isTransientPostgresError(undefined));
});
