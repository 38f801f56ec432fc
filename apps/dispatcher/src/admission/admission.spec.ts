import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentRecord } from '@mesh/contract';
import { Admission, TenantRateLimiter } from './admission.js';

const NO_BYTE_BUDGET = { bytesPerSecond: 0, bytesBurst: 0, maxBodyBytes: 1 };

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
  let members: number | undefined = 0;
  const admission = new Admission(
    { healthy: () => healthy, group: async () => ({ backlog, members }) },
    { ratePerSecond: 1000, burst: 1000, ...NO_BYTE_BUDGET, requireHealthyWorker: true, maxBacklog: 4, retryAfterSeconds: 3 },
  );
  const silent = await admission.check('t', agent);
  assert.equal(silent?.reason, 'NO_HEALTHY_WORKER');
  assert.equal(silent?.message, 'agent "x" has no healthy worker');
  healthy = true;
  // Heartbeats, but nobody in the workers' group: the same refusal, saying why.
  const unread = await admission.check('t', agent);
  assert.equal(unread?.reason, 'NO_HEALTHY_WORKER');
  assert.equal(unread?.httpStatus, 503);
  assert.equal(unread?.retryAfterSeconds, 3);
  assert.match(unread?.message ?? '', /^agent "x" has no healthy worker: .*none is reading its commands/);
  // Members unknown (the broker did not answer): never a refusal.
  members = undefined;
  assert.equal((await admission.check('t', agent))?.reason, 'AGENT_BACKLOG_FULL');
  members = 1;
  const full = await admission.check('t', agent);
  assert.equal(full?.reason, 'AGENT_BACKLOG_FULL');
  assert.equal(full?.httpStatus, 503);
  assert.equal(full?.retryAfterSeconds, 3);
  backlog = undefined;
  assert.equal(await admission.check('t', agent), undefined);
  backlog = 4;
  assert.equal(await admission.check('t', agent), undefined);
  // Without a healthy worker required, neither heartbeats nor members are asked for.
  const limited = new Admission(
    { healthy: () => false, group: async () => ({ backlog: 0, members: 0 }) },
    { ratePerSecond: 1, burst: 1, ...NO_BYTE_BUDGET, requireHealthyWorker: false, maxBacklog: 1, retryAfterSeconds: 1 },
  );
  assert.equal(await limited.check('t', agent), undefined);
  assert.equal((await limited.check('t', agent))?.httpStatus, 429);
});

test('a token bucket charged by cost: a cost above the bucket waits for a full one; settling never fills it over its size', () => {
  let now = 0;
  const bytes = new TenantRateLimiter(1000, 4000, () => now);
  assert.equal(bytes.take('a', 3000), undefined);
  assert.equal(bytes.take('a', 3000), 2); // 1,000 left: 2 s until 3,000
  assert.equal(bytes.take('b', 3000), undefined, 'other tenants are not affected');
  now += 2000;
  assert.equal(bytes.take('a', 3000), undefined);
  now += 10_000;
  assert.equal(bytes.take('a', 9000), undefined, 'a cost above the bucket takes a full bucket');
  assert.equal(bytes.take('a', 1), 1);
  bytes.settle('a', 1_000_000, 0);
  assert.equal(bytes.take('a', 4000), undefined, 'given back up to the bucket size');
  assert.equal(bytes.take('a', 1), 1);
});

test('a token bucket settled above what was taken owes the rest: the tenant waits until the refill paid it', () => {
  let now = 0;
  const bytes = new TenantRateLimiter(1000, 4000, () => now);
  const took = bytes.takeUpTo('a', 9000);
  assert.deepEqual(took, { taken: 4000 }, 'a cost above the bucket takes the bucket');
  bytes.settle('a', 4000, 9000);
  assert.deepEqual(bytes.takeUpTo('a', 1), { waitSeconds: 6 }, '5,000 owed at 1,000/s: 5 s to zero, 1 ms more for a token');
  now += 5000;
  assert.equal(bytes.take('a', 1), 1);
  now += 1000;
  assert.equal(bytes.take('a', 1000), undefined);
});

const byteAdmission = (bytesPerSecond: number) =>
  new Admission(
    { healthy: () => true, group: async () => ({ backlog: 0, members: 1 }) },
    {
      ratePerSecond: 1000,
      burst: 1000,
      bytesPerSecond,
      bytesBurst: 4000,
      maxBodyBytes: 3000,
      requireHealthyWorker: false,
      maxBacklog: 1,
      retryAfterSeconds: 9,
    },
  );

test('the byte budget: Content-Length is charged before the body is read; over it 429 TENANT_BYTES_EXCEEDED', () => {
  const admission = byteAdmission(1000);
  const first = admission.chargeBody('t', 3500);
  assert.ok('settle' in first);
  const refused = admission.chargeBody('t', 1000);
  assert.ok(!('settle' in refused));
  assert.equal(refused.httpStatus, 429);
  assert.equal(refused.reason, 'TENANT_BYTES_EXCEEDED');
  assert.equal(refused.retryAfterSeconds, 1);
  assert.match(refused.message, /tenant "t" exceeded its request body budget of 1000 bytes\/s/);
  assert.ok('settle' in admission.chargeBody('u', 1000), 'other tenants keep their budget');
});

test('the byte budget: a body of unannounced length is charged the body limit, the unread rest given back once read', () => {
  const admission = byteAdmission(1000);
  const chunked = admission.chargeBody('t', undefined);
  assert.ok('settle' in chunked);
  assert.ok(!('settle' in admission.chargeBody('t', 2000)), '3,000 charged of 4,000: 2,000 more is over');
  chunked.settle(100);
  assert.ok('settle' in admission.chargeBody('t', 2000), '2,900 given back');
});

test('the byte budget: a body read beyond what it took up front is charged in full (a small bucket is no way around it)', () => {
  const admission = new Admission(
    { healthy: () => true, group: async () => ({ backlog: 0, members: 1 }) },
    {
      ratePerSecond: 1000,
      burst: 1000,
      bytesPerSecond: 1000,
      bytesBurst: 1000,
      maxBodyBytes: 10_000,
      requireHealthyWorker: false,
      maxBacklog: 1,
      retryAfterSeconds: 9,
    },
  );
  // A chunked body takes the whole 1,000-byte bucket, then is read at 8,500 bytes: 7,500 owed.
  const chunked = admission.chargeBody('t', undefined);
  assert.ok('settle' in chunked);
  chunked.settle(8500);
  const refused = admission.chargeBody('t', 10);
  assert.ok(!('settle' in refused));
  assert.equal(refused.retryAfterSeconds, 8, '7,500 owed + 10 at 1,000 bytes/s');
  // A declared body above the bucket pays its declared length, not the bucket.
  const declared = admission.chargeBody('u', 5500);
  assert.ok('settle' in declared);
  declared.settle(5500);
  const after = admission.chargeBody('u', 10);
  assert.ok(!('settle' in after));
  assert.equal(after.retryAfterSeconds, 5);
  // A compressed body declares its wire bytes and is settled at what it decoded to.
  const compressed = admission.chargeBody('v', 100);
  assert.ok('settle' in compressed);
  compressed.settle(5600);
  const owed = admission.chargeBody('v', 10);
  assert.ok(!('settle' in owed));
  assert.equal(owed.retryAfterSeconds, 5, '4,600 owed + 10 at 1,000 bytes/s');
});

test('the byte budget is off at 0 bytes/s', () => {
  const admission = byteAdmission(0);
  for (let i = 0; i < 10; i++) assert.ok('settle' in admission.chargeBody('t', 1_000_000));
});
