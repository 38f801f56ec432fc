import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTransientInfrastructureError, MeshError } from './errors.js';

test('an unreachable or restarting dependency is transient; a failure of the work is not', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const adminShutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
  const typeorm = Object.assign(new Error('Query failed'), { driverError: adminShutdown });
  assert.ok(isTransientInfrastructureError(refused));
  assert.ok(isTransientInfrastructureError(new Error('Connection terminated unexpectedly')));
  assert.ok(isTransientInfrastructureError(typeorm));
  assert.ok(isTransientInfrastructureError(new AggregateError([refused], 'connect failed')));
  assert.ok(isTransientInfrastructureError(new MeshError('UNAVAILABLE', 'projection failed', { cause: refused })));
  assert.ok(isTransientInfrastructureError(Object.assign(new Error('broker down'), { name: 'KafkaJSConnectionError' })));

  assert.ok(!isTransientInfrastructureError(new Error('always fails')));
  assert.ok(!isTransientInfrastructureError(Object.assign(new Error('duplicate key'), { code: '23505' })));
  assert.ok(!isTransientInfrastructureError(new MeshError('FORBIDDEN', 'no', { retryable: false })));
  assert.ok(!isTransientInfrastructureError(undefined));
});
