import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenBucketLimiter } from './rate-limiter.js';

test('a tenant gets its burst, then waits; other tenants are unaffected', () => {
  let now = 0;
  const limiter = new TokenBucketLimiter(2, 60, () => now);
  assert.equal(limiter.take('acme'), 0);
  assert.equal(limiter.take('acme'), 0);
  assert.equal(limiter.take('acme'), 1, 'one token per second at 60/min');
  assert.equal(limiter.take('globex'), 0);
  now += 1000;
  assert.equal(limiter.take('acme'), 0);
});
