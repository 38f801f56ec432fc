import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { TaskStates, ToolGrants, type Identity } from '@mesh/contract';
import { GrantKeys } from './grant-keys.js';
import { GrantSigner } from './grant-signer.js';
import { TokenExchange, TokenExchangeError } from './token-exchange.js';

// The exchange's rules over in-memory task states; the HTTP endpoint and its metrics are proven in
// test/security/tool-grants.integration-spec.ts against a real dispatcher.

const issuer = 'https://d.test';
const keys = await GrantKeys.generate();
const signer = new GrantSigner(keys, issuer, 3_600_000);
const states = new Map<string, string>([['t1', TaskStates.working]]);
const allowed = new Map<string, ReadonlySet<string> | 'any'>([['refund-agent', 'any']]);
const exchange = new TokenExchange({
  keys,
  issuer,
  tokenEndpoint: signer.tokenEndpoint,
  taskState: (taskId, tenant) => Promise.resolve(tenant === 'acme' ? states.get(taskId) : undefined),
  policy: { allowed: (agentId) => Promise.resolve(allowed.get(agentId) ?? new Set()) },
});
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
const form = (grant: string, extra: Record<string, unknown> = {}) => ({
  grant_type: ToolGrants.grantType,
  subject_token: grant,
  subject_token_type: ToolGrants.jwtTokenType,
  resource: 'billing-tools',
  ...extra,
});
const refusedWith = (code: string, reason: string) => (err: unknown) => {
  assert.ok(err instanceof TokenExchangeError, String(err));
  assert.equal(err.code, code);
  assert.equal(err.reason, reason);
  return true;
};

test('a grant of an open task is exchanged for an at+jwt token that verifies at its audience only', async () => {
  const res = await exchange.exchange(form(signer.grantFor(identity)));
  assert.equal(res.token_type, 'Bearer');
  assert.equal(res.issued_token_type, ToolGrants.accessTokenType);
  assert.ok(res.expires_in > 50 && res.expires_in <= 60);
  assert.equal(decodeProtectedHeader(res.access_token).typ, 'at+jwt');
  const jwks = createLocalJWKSet(keys.jwks());
  const at = (audience: string) => jwtVerify(res.access_token, jwks, { issuer, audience, typ: 'at+jwt', algorithms: ['EdDSA'] });
  const { payload } = await at('billing-tools');
  assert.deepEqual([payload.tenant, payload.sub, payload.task_id, payload.agent_id], ['acme', 'alice', 't1', 'refund-agent']);
  assert.deepEqual(payload.act, { sub: 'agent:refund-agent', act: { sub: 'apikey:demo' } });
  await assert.rejects(at('crm-tools'));
});

test('a connection token names the agent and no tenant', async () => {
  const res = await exchange.exchange(form(signer.grantFor(identity), { requested_token_type: ToolGrants.connectionTokenType }));
  assert.equal(res.issued_token_type, ToolGrants.connectionTokenType);
  const c = decodeJwt(res.access_token);
  assert.equal(c.sub, 'agent:refund-agent');
  assert.equal(c.tenant, undefined);
});

test('grants that do not verify are invalid_grant: expired, signed by another key, an issued token, another issuer', async () => {
  await assert.rejects(
    exchange.exchange(form(signer.grantFor(identity, Date.now() - 2 * 3_600_000))),
    refusedWith('invalid_grant', 'expired'),
  );
  const other = new GrantSigner(await GrantKeys.generate(), issuer, 3_600_000);
  await assert.rejects(exchange.exchange(form(other.grantFor(identity))), refusedWith('invalid_grant', 'unverified'));
  const issued = await exchange.exchange(form(signer.grantFor(identity), { resource: signer.tokenEndpoint }));
  await assert.rejects(exchange.exchange(form(issued.access_token)), refusedWith('invalid_grant', 'unverified'));
  const elsewhere = new GrantSigner(keys, 'https://elsewhere.test', 3_600_000);
  await assert.rejects(exchange.exchange(form(elsewhere.grantFor(identity))), refusedWith('invalid_grant', 'unverified'));
  await assert.rejects(exchange.exchange(form('not-a-jwt')), refusedWith('invalid_grant', 'unverified'));
});

test('a grant of a finished or unknown task is invalid_grant', async () => {
  states.set('t2', TaskStates.completed);
  states.set('t3', TaskStates.canceled);
  await assert.rejects(
    exchange.exchange(form(signer.grantFor({ ...identity, taskId: 't2' }))),
    refusedWith('invalid_grant', 'task_finished'),
  );
  await assert.rejects(
    exchange.exchange(form(signer.grantFor({ ...identity, taskId: 't3' }))),
    refusedWith('invalid_grant', 'task_finished'),
  );
  await assert.rejects(
    exchange.exchange(form(signer.grantFor({ ...identity, taskId: 't9' }))),
    refusedWith('invalid_grant', 'task_unknown'),
  );
});

test('a resource the policy does not allow is invalid_target; so is none or more than one', async () => {
  allowed.set('crm-agent', new Set(['crm-tools']));
  const crm = signer.grantFor({ ...identity, agentId: 'crm-agent' });
  await assert.rejects(exchange.exchange(form(crm)), refusedWith('invalid_target', 'resource_not_allowed'));
  assert.equal((await exchange.exchange(form(crm, { resource: 'crm-tools' }))).token_type, 'Bearer');
  const g = signer.grantFor(identity);
  await assert.rejects(
    exchange.exchange(form(g, { resource: ['billing-tools', 'crm-tools'] })),
    refusedWith('invalid_target', 'resource_count'),
  );
  await assert.rejects(exchange.exchange(form(g, { resource: undefined })), refusedWith('invalid_target', 'resource_count'));
});

test('malformed requests: unsupported_grant_type, invalid_request', async () => {
  const g = signer.grantFor(identity);
  await assert.rejects(
    exchange.exchange(form(g, { grant_type: 'client_credentials' })),
    refusedWith('unsupported_grant_type', 'grant_type'),
  );
  await assert.rejects(exchange.exchange({}), refusedWith('invalid_request', 'missing_parameter'));
  await assert.rejects(
    exchange.exchange(form(g, { subject_token_type: ToolGrants.accessTokenType })),
    refusedWith('invalid_request', 'token_type'),
  );
  await assert.rejects(exchange.exchange(form(g, { requested_token_type: 'urn:x' })), refusedWith('invalid_request', 'token_type'));
  await assert.rejects(exchange.exchange(form(g, { subject_token: [g, g] })), refusedWith('invalid_request', 'repeated_parameter'));
});

test('a rotated key: grants signed with the previous key still verify; the JWKS lists both', async () => {
  const old = await GrantKeys.generate();
  const rotated = await GrantKeys.generate(old.current);
  assert.deepEqual(
    rotated.jwks().keys.map((k) => k.kid),
    [rotated.current.kid, old.current.kid],
  );
  const ex = new TokenExchange({
    keys: rotated,
    issuer,
    tokenEndpoint: signer.tokenEndpoint,
    taskState: () => Promise.resolve(TaskStates.working),
    policy: { allowed: () => Promise.resolve('any') },
  });
  const fromOld = new GrantSigner(old, issuer, 3_600_000).grantFor(identity);
  assert.equal((await ex.exchange(form(fromOld))).token_type, 'Bearer');
});

test('a task store that cannot be read is temporarily_unavailable (503), not a refusal of the grant', async () => {
  const down = new TokenExchange({
    keys,
    issuer,
    tokenEndpoint: signer.tokenEndpoint,
    taskState: () => Promise.reject(new Error('connection terminated')),
    policy: { allowed: () => Promise.resolve('any') },
  });
  await assert.rejects(down.exchange(form(signer.grantFor(identity))), (err: unknown) => {
    assert.ok(err instanceof TokenExchangeError);
    assert.equal(err.code, 'temporarily_unavailable');
    assert.equal(err.status, 503);
    return true;
  });
});
