import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentRecord } from '@mesh/contract';
import { CatalogState } from './catalog-state.js';

const rec = (over: Partial<AgentRecord> = {}): AgentRecord => ({
  id: 'a1',
  tenant: 'acme',
  visibility: 'tenant',
  version: 1,
  card: { name: 'A1' },
  channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 3 },
  retired: false,
  updatedAt: new Date(0).toISOString(),
  ...over,
});

test('visibility: own tenant sees tenant/private agents, others only public ones', () => {
  const s = new CatalogState();
  s.applyRecord('a1', rec());
  s.applyRecord('p1', rec({ id: 'p1', visibility: 'private' }));
  s.applyRecord('pub', rec({ id: 'pub', visibility: 'public' }));
  assert.equal(s.get('a1', 'acme')?.id, 'a1');
  assert.equal(s.get('p1', 'acme')?.id, 'p1');
  assert.equal(s.get('a1', 'globex'), undefined);
  assert.equal(s.get('p1', 'globex'), undefined);
  assert.equal(s.get('pub', 'globex')?.id, 'pub');
  assert.equal(s.get('missing', 'acme'), undefined);
});

test('older versions never replace newer ones; retire sticks; tombstones delete', () => {
  const s = new CatalogState();
  s.applyRecord('a1', rec({ version: 2 }));
  s.applyRecord('a1', rec({ version: 1 }));
  assert.equal(s.get('a1', 'acme')?.version, 2);
  s.applyRecord('a1', rec({ version: 2, retired: true }));
  s.applyRecord('a1', rec({ version: 2, retired: false }));
  assert.equal(s.get('a1', 'acme')?.retired, true);
  s.applyRecord('a1', null);
  assert.equal(s.size, 0);
});

test('health follows the freshest heartbeat and its TTL (default when none)', () => {
  let now = 10_000;
  const s = new CatalogState(1000, () => now);
  s.applyRecord('a1', rec());
  assert.equal(s.healthy('a1'), false);
  s.applyHeartbeat({ agentId: 'a1', workerId: 'w', atUnixMs: now, ttlMs: 0 });
  assert.equal(s.healthy('a1'), true);
  now += 999;
  assert.equal(s.healthy('a1'), true);
  s.applyHeartbeat({ agentId: 'a1', workerId: 'w', atUnixMs: now - 5000, ttlMs: 1000 });
  now += 2;
  assert.equal(s.healthy('a1'), false, 'a stale heartbeat does not revive it');
  s.applyHeartbeat({ agentId: 'a1', workerId: 'w', atUnixMs: now + 3_600_000, ttlMs: 1000 });
  now += 1001;
  assert.equal(s.healthy('a1'), false, 'a clock in the future does not extend health');
  s.applyHeartbeat({ agentId: 'ghost', workerId: 'w', atUnixMs: now, ttlMs: 1000 });
  assert.equal(s.healthy('ghost'), false, 'unregistered agents are never healthy');
});

test('time the catalog could not hear heartbeats does not count against their TTL', () => {
  let now = 10_000;
  const s = new CatalogState(1000, () => now, 500);
  s.applyRecord('a1', rec());
  s.applyRecord('a2', rec({ id: 'a2' }));
  const listen = (ms: number) => {
    for (const end = now + ms; now < end; now += 100) s.heard();
  };
  listen(200);
  s.applyHeartbeat({ agentId: 'a1', workerId: 'w', atUnixMs: now, ttlMs: 1000 });
  listen(400);
  // Deaf (no fetch completes) for 5 s, far beyond the TTL: still healthy, during and after.
  now += 5000;
  assert.equal(s.healthy('a1'), true, 'healthy while the catalog cannot hear');
  s.heard();
  assert.equal(s.healthy('a1'), true, 'healthy right after hearing again');
  // Listening again: the rest of the TTL (1000 - 400 ms already listened) runs out.
  listen(500);
  assert.equal(s.healthy('a1'), true);
  listen(200);
  assert.equal(s.healthy('a1'), false, 'a worker silent for a whole TTL of listening is not healthy');
  // A heartbeat after a deaf period gets its plain TTL; earlier deafness does not extend it.
  s.applyHeartbeat({ agentId: 'a2', workerId: 'w', atUnixMs: now, ttlMs: 1000 });
  listen(1100);
  assert.equal(s.healthy('a2'), false);
  // Short gaps (below deafAfterMs) are ordinary fetch pacing, counted as listening.
  s.applyHeartbeat({ agentId: 'a2', workerId: 'w', atUnixMs: now, ttlMs: 1000 });
  now += 400;
  s.heard();
  now += 400;
  s.heard();
  now += 300;
  assert.equal(s.healthy('a2'), false);
});
