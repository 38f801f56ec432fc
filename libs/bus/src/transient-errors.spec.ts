import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError } from '@mesh/contract';
import { isRecordRefusedError, isTransientKafkaError } from './transient-errors.js';

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

test('a record the broker refuses for its size or form is refused for good, also wrapped', () => {
  const tooLarge = Object.assign(new Error('The request included a message larger than the max message size the server will accept'), {
    name: 'KafkaJSProtocolError',
    type: 'MESSAGE_TOO_LARGE',
  });
  assert.equal(isRecordRefusedError(tooLarge), true);
  assert.equal(isRecordRefusedError(new Error('wrapped', { cause: tooLarge })), true);
  assert.equal(isRecordRefusedError(Object.assign(new Error('x'), { type: 'NOT_LEADER_FOR_PARTITION' })), false);
  assert.equal(isRecordRefusedError(Object.assign(new Error('down'), { name: 'KafkaJSConnectionError' })), false);
});
