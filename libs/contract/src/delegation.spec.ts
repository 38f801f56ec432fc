import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { actFor, actorChainDepth, childTaskId, MAX_ACTOR_CHAIN, narrowScopes, parseActorClaim } from './delegation.js';
import { decodeEnvelope, encodeEnvelope, Envelopes, type Identity } from './envelope.js';

const identity: Identity = {
  tenant: 'acme',
  agentId: 'refund-agent',
  taskId: 't1',
  contextId: 'c1',
  messageId: 'm1',
  executionId: 'acme:t1:1',
  subject: 'alice',
  actor: 'agent:triage-agent',
};

test('a child id depends on the parent execution, the step and the ask, and nothing else', () => {
  const ask = { agentId: 'refund-agent', parts: [{ text: 'refund INV-1' }] };
  const id = childTaskId('acme:p:1', 0, ask);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(childTaskId('acme:p:1', 0, { parts: [{ text: 'refund INV-1' }], agentId: 'refund-agent' }), id, 'key order does not matter');
  assert.notEqual(childTaskId('acme:p:2', 0, ask), id, 'another turn');
  assert.notEqual(childTaskId('acme:p:1', 1, ask), id, 'another step');
  assert.notEqual(childTaskId('acme:p:1', 0, { ...ask, parts: [{ text: 'refund INV-2' }] }), id, 'another ask');
  assert.notEqual(childTaskId('acme:p:1', 0, { skill: 'refund-agent', parts: ask.parts }), id, 'a skill is not an agent id');
  assert.throws(() => childTaskId('acme:p:1', -1, ask), /step must be a non-negative integer/);
});

test('distinct asks never share a child id (property)', () => {
  fc.assert(
    fc.property(fc.string(), fc.nat(15), fc.string(), fc.string(), (exec, step, a, b) => {
      fc.pre(a !== b);
      return (
        childTaskId(exec, step, { agentId: 'x', parts: [{ text: a }] }) !== childTaskId(exec, step, { agentId: 'x', parts: [{ text: b }] })
      );
    }),
  );
});

test('scopes only narrow: requested scopes the holder lacks are dropped; none requested keeps all', () => {
  assert.deepEqual(narrowScopes(['billing:read', 'billing:refund'], ['billing:read', 'admin']), ['billing:read']);
  assert.deepEqual(narrowScopes(['billing:read'], undefined), ['billing:read']);
  assert.deepEqual(narrowScopes([], ['admin']), []);
  assert.deepEqual(narrowScopes(['*'], ['billing:read', 'billing:read']), ['billing:read'], 'every scope narrows to the asked ones');
  assert.deepEqual(narrowScopes(['*'], undefined), ['*']);
  fc.assert(
    fc.property(fc.array(fc.string()), fc.option(fc.array(fc.string()), { nil: undefined }), (held, asked) =>
      narrowScopes(held, asked).every((s) => held.includes(s) || held.includes('*')),
    ),
  );
});

test('the actor chain nests RFC 8693 style and its header round-trips; a malformed or too deep chain is refused', () => {
  const chain = actFor('agent:refund-agent', actFor('agent:triage-agent', { sub: 'apikey:demo' }));
  assert.deepEqual(chain, { sub: 'agent:refund-agent', act: { sub: 'agent:triage-agent', act: { sub: 'apikey:demo' } } });
  assert.equal(actorChainDepth(chain), 3);
  const env = Envelopes.run(
    { ...identity, act: chain, scopes: ['a', 'b'], parentTaskId: 'p', rootTaskId: 'r', retryBudget: 3 },
    { turn: 1, message: {} },
  );
  const wire = encodeEnvelope(env);
  const back = decodeEnvelope({ headers: wire.headers, value: wire.value });
  assert.deepEqual(back.identity.act, chain);
  assert.deepEqual(back.identity.scopes, ['a', 'b']);
  assert.equal(back.identity.parentTaskId, 'p');
  assert.equal(back.identity.rootTaskId, 'r');
  assert.equal(back.identity.retryBudget, 3);
  assert.throws(() => parseActorClaim('{'), /act header is not JSON/);
  assert.throws(() => parseActorClaim('{"sub":""}'), /invalid act header/);
  let deep = { sub: 'x' } as ReturnType<typeof actFor>;
  for (let i = 0; i < MAX_ACTOR_CHAIN; i++) deep = actFor(`a${i}`, deep);
  assert.throws(() => parseActorClaim(JSON.stringify(deep)), /act chain deeper than/);
  assert.throws(() => decodeEnvelope({ headers: { ...wire.headers, act: '[]' }, value: wire.value }), /invalid act header/);
  assert.throws(() => decodeEnvelope({ headers: { ...wire.headers, retry_budget: '-1' }, value: wire.value }), /invalid retry_budget/);
});

test('a delegating status event carries its children and usage; a malformed delegation is a decode failure', () => {
  const status = Envelopes.status(identity, {
    seq: 3,
    state: 'TASK_STATE_WORKING',
    final: true,
    usage: { attempt: 2, retries: 1 },
    delegation: { join: 'all', children: [{ step: 0, taskId: 'c', agentId: 'refund-agent', parts: [{ text: 'x' }] }] },
  });
  const wire = encodeEnvelope(status);
  assert.deepEqual(decodeEnvelope({ headers: wire.headers, value: wire.value }), status);
  const bad = (delegation: unknown) =>
    decodeEnvelope({
      headers: wire.headers,
      value: Buffer.from(JSON.stringify({ seq: 3, state: 'TASK_STATE_WORKING', final: true, delegation })),
    });
  assert.throws(() => bad({ join: 'all', children: [] }), /DECODE|invalid task.status body/);
  assert.throws(() => bad({ join: 'some', children: [{ step: 0, taskId: 'c', agentId: 'a', parts: [{}] }] }), /invalid task.status body/);
  assert.throws(
    () => bad({ join: 'all', children: [{ step: 0, taskId: 'c', agentId: 'a', skill: 's', parts: [{}] }] }),
    /exactly one of agentId and skill/,
  );
  assert.throws(() => bad({ join: 'all', children: [{ step: 0, taskId: 'c', parts: [{}] }] }), /exactly one of agentId and skill/);
});
