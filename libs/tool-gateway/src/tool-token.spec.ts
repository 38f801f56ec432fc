import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, exportJWK, SignJWT, type JWK } from 'jose';
import { ToolGrants } from '@mesh/contract';
import {
  anyToolTokenVerifier,
  createToolTokenVerifier,
  hmacToolTokenVerifier,
  HmacToolTokenMinter,
  verifyToolToken,
} from './tool-token.js';

const secret = 'a-test-secret-of-enough-length';

test('a minted token verifies for its audience only and carries tenant and subject', async () => {
  const token = await new HmacToolTokenMinter(secret).mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1' });
  assert.deepEqual(await verifyToolToken(token, secret, 'billing-tools'), { tenant: 'acme', subject: 'alice', taskId: 't1' });
  await assert.rejects(verifyToolToken(token, secret, 'other-server'));
  await assert.rejects(verifyToolToken(token, 'another-secret-of-enough-length', 'billing-tools'));
});

test('a call token of delegated work carries the actor chain (RFC 8693 act) and the narrowed scopes', async () => {
  const act = { sub: 'agent:refund-agent', act: { sub: 'agent:triage-agent', act: { sub: 'apikey:demo' } } };
  const token = await new HmacToolTokenMinter(secret).mint({
    audience: 'billing-tools',
    tenant: 'acme',
    subject: 'alice',
    taskId: 't1',
    act,
    scopes: ['billing:read'],
  });
  assert.deepEqual(await verifyToolToken(token, secret, 'billing-tools'), {
    tenant: 'acme',
    subject: 'alice',
    act,
    scopes: ['billing:read'],
    taskId: 't1',
  });
});

// The dispatcher's side is tested in apps/dispatcher (token-exchange.spec); here: what a tool server accepts.
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'EdDSA' };
const keys = createLocalJWKSet({ keys: [jwk] });
const issuer = 'https://dispatcher.test';
const issued = (claims: Record<string, unknown>, typ: string = ToolGrants.accessTokenTyp, aud: string | string[] = 'billing-tools') =>
  new SignJWT({ tenant: 'acme', task_id: 't1', agent_id: 'refund-agent', ...claims })
    .setProtectedHeader({ alg: 'EdDSA', kid: 'k1', typ })
    .setIssuer(issuer)
    .setAudience(aud)
    .setSubject('alice')
    .setJti('j1')
    .setIssuedAt()
    .setExpirationTime('60s')
    .sign(privateKey);

test('the JWKS verifier accepts an at+jwt token of its issuer and audience, with task and agent', async () => {
  const v = createToolTokenVerifier({ jwksUrl: 'http://unused.test/jwks', issuer, audience: 'billing-tools', keys });
  assert.deepEqual(await v.call(await issued({})), { tenant: 'acme', subject: 'alice', taskId: 't1', agentId: 'refund-agent' });
});

test('the JWKS verifier refuses another audience, another issuer, a grant (typ) and a connection token for calls', async () => {
  const v = createToolTokenVerifier({ jwksUrl: 'http://unused.test/jwks', issuer, audience: 'billing-tools', keys });
  await assert.rejects(v.claims(await issued({}, ToolGrants.accessTokenTyp, 'other-server')));
  await assert.rejects(v.claims(await issued({}, ToolGrants.accessTokenTyp, ['billing-tools', 'other-server'])));
  await assert.rejects(v.claims(await issued({}, ToolGrants.grantTyp)));
  const other = createToolTokenVerifier({
    jwksUrl: 'http://unused.test/jwks',
    issuer: 'https://elsewhere.test',
    audience: 'billing-tools',
    keys,
  });
  await assert.rejects(other.claims(await issued({})));
  const connection = await issued({ tenant: undefined, task_id: undefined });
  assert.deepEqual(await v.claims(connection), { subject: 'alice', agentId: 'refund-agent' });
  await assert.rejects(v.call(connection), /lacks tenant/);
});

test('a server accepting both takes the JWKS token and the HS256 one; an HS256 token with a guessed secret is refused', async () => {
  const v = anyToolTokenVerifier([
    createToolTokenVerifier({ jwksUrl: 'http://unused.test/jwks', issuer, audience: 'billing-tools', keys }),
    hmacToolTokenVerifier(secret, 'billing-tools'),
  ]);
  assert.equal((await v.call(await issued({}))).tenant, 'acme');
  const hmac = await new HmacToolTokenMinter(secret).mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1' });
  assert.equal((await v.call(hmac)).tenant, 'acme');
  const guessed = await new HmacToolTokenMinter('a-guessed-secret-of-some-length').mint({
    audience: 'billing-tools',
    tenant: 'acme',
    subject: 'alice',
    taskId: 't1',
  });
  await assert.rejects(v.call(guessed));
});
