import { test } from 'node:test';
import assert from 'node:assert/strict';
import { heartbeatOf } from './kafka-ops.js';

const value = (v: unknown) => Buffer.from(JSON.stringify(v));
const beat = { agentId: 'word-count-agent', workerId: 'w-1', atUnixMs: 1_700_000_000_000, ttlMs: 15_000 };

test('a heartbeat names the host and the Kafka principal the worker consumes as', () => {
  assert.deepEqual(heartbeatOf(value({ ...beat, host: 'pod-7', principal: 'team-words' })), {
    ...beat,
    host: 'pod-7',
    principal: 'team-words',
  });
});

test('a heartbeat without principal (no authentication, older workers) is still a heartbeat', () => {
  assert.deepEqual(heartbeatOf(value({ ...beat, host: 'pod-7' })), { ...beat, host: 'pod-7' });
  assert.deepEqual(heartbeatOf(value(beat)), beat);
});

test('a host or principal that is no name is dropped, the beat kept', () => {
  for (const bad of [42, '', 'x'.repeat(256), { name: 'team-words' }, ['team-words'], null, true])
    assert.deepEqual(heartbeatOf(value({ ...beat, host: bad, principal: bad })), beat, JSON.stringify(bad));
  assert.equal(heartbeatOf(value({ ...beat, principal: 'x'.repeat(255) }))?.principal?.length, 255);
});

test('what is not a heartbeat is undefined', () => {
  assert.equal(heartbeatOf(null), undefined);
  assert.equal(heartbeatOf(Buffer.from('not json')), undefined);
  assert.equal(heartbeatOf(value({ ...beat, agentId: 7 })), undefined);
  assert.equal(heartbeatOf(value({ ...beat, workerId: undefined })), undefined);
});
