import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentRecord } from '@mesh/contract';
import { Admission, TenantRateLimiter } from './admission.js';

test('the token bucket allows the burst, then one request per 1/rate seconds, per tenant', () => {
  let now = 0;
  const limiter = new TenantRateLimiter(2, 3, () => now);
  assert.equal(limiter.take('a'), undefined);
  assert.equal(limiter.take('a'), undefined);
  assert.equal(limiter.take('a'), undefined);
  assert.equal(limiter.take('a'), 1); // empty: retry after a second
  assert.equal(limiter.take('b'), undefined); // other tenants are not affected
  now += 500; // half a second refills one token at 2/s
  assert.equal(limiter.take('a'), undefined);
  assert.equal(limiter.take('a'), 1);
});

test('admission: rate first, then health, then backlog; an unknown backlog never refuses', async () => {
  const agent = { id: 'x' } as AgentRecord;
  let healthy = false;
  let backlog: number | undefined = 5;
  const admission = new Admission(
    { healthy: () => healthy, backlog: async () => backlog },
    { ratePerSecond: 1000, burst: 1000, requireHealthyWorker: true, maxBacklog: 4, retryAfterSeconds: 3 },
  );
  assert.equal((await admission.check('t', agent))?.reason, 'NO_HEALTHY_WORKER');
  healthy = true;
  const full = await admission.check('t', agent);
  assert.equal(full?.reason, 'AGENT_BACKLOG_FULL');
  assert.equal(full?.httpStatus, 503);
  assert.equal(full?.retryAfterSeconds, 3);
  backlog = undefined;
  assert.equal(await admission.check('t', agent), undefined);
  backlog = 4;
  assert.equal(await admission.check('t', agent), undefined);
  const limited = new Admission(
    { healthy: () => false, backlog: async () => 0 },
    { ratePerSecond: 1, burst: 1, requireHealthyWorker: false, maxBacklog: 1, retryAfterSeconds: 1 },
  );
  assert.equal(await limited.check('t', agent), undefined);
  assert.equal((await limited.check('t', agent))?.httpStatus, 429);
});
