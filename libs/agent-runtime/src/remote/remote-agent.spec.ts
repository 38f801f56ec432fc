import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRemoteAgentSpecs, retryAfterMs } from './remote-agent.js';

test('a spec is validated with defaults filled in', () => {
  const [spec] = parseRemoteAgentSpecs([{ id: 'quotes-agent', cardUrl: 'https://q.example/.well-known/agent-card.json' }]);
  assert.deepEqual(spec!.auth, { type: 'none' });
  assert.equal(spec!.visibility, 'tenant');
  assert.equal(spec!.messageIdDedup, false);
  assert.equal(spec!.allowLoopback, false);
});

test('a bad spec names its index and field', () => {
  assert.throws(
    () => parseRemoteAgentSpecs([{ id: 'Bad Id', cardUrl: 'https://q.example/' }]),
    /remote agent \[0\]: id: must be an agent id/,
  );
  assert.throws(() => parseRemoteAgentSpecs([{ id: 'a', cardUrl: 'not a url' }]), /remote agent \[0\]: cardUrl/);
  assert.throws(
    () => parseRemoteAgentSpecs([{ id: 'a', cardUrl: 'https://q.example/', auth: { type: 'bearer', token: 'inline-secret' } }]),
    /remote agent \[0\]: auth\.token/,
  );
  assert.throws(() => parseRemoteAgentSpecs([{ id: 'a', cardUrl: 'https://q.example/', extra: 1 }]), /remote agent \[0\]/);
  assert.throws(
    () =>
      parseRemoteAgentSpecs([
        { id: 'a', cardUrl: 'https://q.example/' },
        { id: 'a', cardUrl: 'https://r.example/' },
      ]),
    /id "a" appears twice/,
  );
  assert.throws(() => parseRemoteAgentSpecs({}), /expected a JSON array/);
});

test('Retry-After in seconds or as a date, bounded', () => {
  assert.equal(retryAfterMs('3'), 3000);
  assert.equal(retryAfterMs(null), 1000);
  assert.equal(retryAfterMs('0'), 1000);
  assert.equal(retryAfterMs('100000'), 300_000);
  assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 0), 10_000);
  assert.equal(retryAfterMs('soon'), 1000);
});
