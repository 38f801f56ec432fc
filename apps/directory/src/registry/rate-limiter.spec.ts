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

test('keys whose bucket has refilled are dropped once many are tracked, so naming many keys costs no memory', () => {
  let now = 0;
  const limiter = new TokenBucketLimiter(1, 60, () => now, 100);
  for (let i = 0; i < 100; i++) assert.equal(limiter.take(`k${i}`), 0);
  assert.equal(limiter.size, 100);
  now += 1000; // every bucket is full again
  assert.equal(limiter.take('k-new'), 0);
  assert.equal(limiter.size, 1);
  assert.equal(limiter.take('k-new'), 1, 'a bucket in use is kept');
});
