import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Identity } from '@mesh/contract';
import { grantClaims, issuedClaims } from './grant-claims.js';

const identity: Identity = {
  tenant: 'acme',
  agentId: 'refund-agent',
  taskId: 't1',
  contextId: 'c1',
  messageId: 'm1',
  executionId: 'acme:t1:0',
  subject: 'alice',
  actor: 'apikey:demo',
};
const now = 1_700_000_000_000;
const hour = 3_600_000;

test('a grant names the task, its subject, tenant, agent and actor, and lives the TTL without a deadline', () => {
  const g = grantClaims(identity, 'https://d.test', 'https://d.test/oauth/token', { nowMs: now, ttlMs: hour });
  assert.equal(g.iss, 'https://d.test');
  assert.equal(g.aud, 'https://d.test/oauth/token');
  assert.deepEqual([g.sub, g.tenant, g.agent_id, g.task_id, g.execution_id], ['alice', 'acme', 'refund-agent', 't1', 'acme:t1:0']);
  assert.deepEqual(g.act, { sub: 'apikey:demo' });
  assert.equal(g.scope, undefined);
  assert.equal(g.iat, now / 1000);
  assert.equal(g.exp, (now + hour) / 1000);
  assert.notEqual(g.jti, grantClaims(identity, 'i', 'a', { nowMs: now, ttlMs: hour }).jti);
});

test('a grant ends at the deadline when that comes first; carries the chain and scopes of delegated work', () => {
  const act = { sub: 'agent:triage', act: { sub: 'apikey:demo' } };
  const g = grantClaims({ ...identity, deadlineUnixMs: now + 60_000, act, scopes: ['billing:read', 'billing:refund'] }, 'i', 'a', {
    nowMs: now,
    ttlMs: hour,
  });
  assert.equal(g.exp, (now + 60_000) / 1000);
  assert.deepEqual(g.act, act);
  assert.equal(g.scope, 'billing:read billing:refund');
  const far = grantClaims({ ...identity, deadlineUnixMs: now + 10 * hour }, 'i', 'a', { nowMs: now, ttlMs: hour });
  assert.equal(far.exp, (now + hour) / 1000);
});

test('an issued call token: audience the resource, the agent outermost actor, 60 s at most and never past its grant', () => {
  const g = grantClaims({ ...identity, scopes: ['billing:read'] }, 'https://d.test', 'x', { nowMs: now, ttlMs: hour });
  const t = issuedClaims(g, 'billing-tools', 'call', now);
  assert.equal(t.aud, 'billing-tools');
  assert.equal(t.iss, 'https://d.test');
  assert.deepEqual(
    [t.sub, t.tenant, t.task_id, t.agent_id, t.scope, t.grant_jti],
    ['alice', 'acme', 't1', 'refund-agent', 'billing:read', g.jti],
  );
  assert.deepEqual(t.act, { sub: 'agent:refund-agent', act: { sub: 'apikey:demo' } });
  assert.equal(t.exp, now / 1000 + 60);
  const short = issuedClaims({ ...g, exp: now / 1000 + 20 }, 'billing-tools', 'call', now);
  assert.equal(short.exp, now / 1000 + 20);
});

test('a connection token names the agent as subject and no tenant, task or actor chain', () => {
  const g = grantClaims(identity, 'i', 'a', { nowMs: now, ttlMs: hour });
  const t = issuedClaims(g, 'billing-tools', 'connection', now);
  assert.equal(t.sub, 'agent:refund-agent');
  assert.equal(t.tenant, undefined);
  assert.equal(t.task_id, undefined);
  assert.equal(t.act, undefined);
});
