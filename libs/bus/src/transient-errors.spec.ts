import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError } from '@mesh/contract';
import { isTransientKafkaError } from './transient-errors.js';

test('a Kafka broker unreachable or timing out is transient; other failures are not', () => {
  const down = Object.assign(new Error('broker down'), { name: 'KafkaJSConnectionError' });
  assert.ok(isTransientKafkaError(down));
  assert.ok(isTransientKafkaError(Object.assign(new Error('closed'), { name: 'KafkaJSConnectionClosedError' })));
  assert.ok(isTransientKafkaError(Object.assign(new Error('slow'), { name: 'KafkaJSRequestTimeoutError' })));
  assert.ok(isTransientKafkaError(new MeshError('UNAVAILABLE', 'send failed', { cause: down })));

  assert.ok(!isTransientKafkaError(Object.assign(new Error('too large'), { name: 'KafkaJSProtocolError' })));
  assert.ok(!isTransientKafkaError(Object.assign(new Error('terminating connection'), { code: '57P01' })));
  assert.ok(!isTransientKafkaError(undefined));
});
