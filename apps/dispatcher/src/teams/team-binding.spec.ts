import { test } from 'node:test';
import assert from 'node:assert/strict';
import { teamBindingBody } from './team-binding.js';

const key = { kty: 'OKP', crv: 'Ed25519', kid: 'k1', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' };
const body = {
  tenant: 'acme',
  agents: ['word-count-agent'],
  eventKeys: { keys: [key] },
  toolAudiences: ['billing-tools'],
  kafkaPrincipal: 'User:team-words',
};

test('a binding with a public Ed25519 key is taken; extra JWK members are dropped', () => {
  const parsed = teamBindingBody.parse({ ...body, eventKeys: { keys: [{ ...key, use: 'sig', alg: 'EdDSA' }] } });
  assert.deepEqual(parsed.eventKeys.keys, [key]);
  assert.deepEqual(teamBindingBody.parse({ tenant: 'acme', agents: ['a'], eventKeys: { keys: [key] } }).toolAudiences, []);
});

test('bad bindings are refused naming the problem', () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ ...body, agents: ['Bad Agent'] }, /agent id/],
    [{ ...body, agents: [] }, /agents/],
    [{ ...body, agents: ['a', 'a'] }, /must not repeat/],
    [{ ...body, tenant: 'ACME' }, /tenant/],
    [{ ...body, eventKeys: { keys: [{ ...key, d: 'secret' }] } }, /private key/],
    [{ ...body, eventKeys: { keys: [{ ...key, kty: 'EC' }] } }, /kty/],
    [{ ...body, eventKeys: { keys: [{ ...key, crv: 'X25519' }] } }, /crv/],
    [{ ...body, eventKeys: { keys: [{ ...key, kid: undefined }] } }, /kid/],
    [{ ...body, eventKeys: { keys: [key, key] } }, /key ids/],
    [{ ...body, eventKeys: { keys: [] } }, /keys/],
    [{ ...body, kafkaPrincipal: 'team-words' }, /User:/],
    [{ ...body, extra: 1 }, /extra/],
  ];
  for (const [input, problem] of cases) {
    const r = teamBindingBody.safeParse(input);
    assert.equal(r.success, false, JSON.stringify(input));
    assert.match(JSON.stringify(r.error?.issues), problem, JSON.stringify(input));
  }
});
