import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { Authenticator } from './authenticator.js';
import { loadAuthOptions } from './auth.config.js';

async function setup() {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const auth = new Authenticator({
    apiKeys: loadAuthOptions({ AUTH_API_KEYS: 'demo-acme=acme:alice,demo-globex=globex:bob' }).apiKeys,
    jwt: { issuer: 'https://idp.test', audience: 'agent-mesh', jwks: { keys: [jwk] } },
  });
  const sign = (claims: Record<string, unknown>, opts: { iss?: string; aud?: string; exp?: string | number; nbf?: string | number } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(opts.iss ?? 'https://idp.test')
      .setAudience(opts.aud ?? 'agent-mesh')
      .setSubject('carol')
      .setIssuedAt()
      .setNotBefore(opts.nbf ?? '0s')
      .setExpirationTime(opts.exp ?? '5m')
      .sign(privateKey);
  return { auth, sign };
}

test('API keys map to their tenant and subject', async () => {
  const { auth } = await setup();
  assert.deepEqual(await auth.authenticate('Bearer demo-acme'), { tenant: 'acme', subject: 'alice', actor: 'apikey:demo…', scopes: ['*'] });
  assert.equal((await auth.authenticate('Bearer demo-globex')).tenant, 'globex');
  // The scheme is case-insensitive (RFC 9110 §11.1).
  assert.equal((await auth.authenticate('bearer demo-globex')).tenant, 'globex');
  assert.equal((await auth.authenticate('BEARER demo-acme')).tenant, 'acme');
  await assert.rejects(auth.authenticate('Bearer demo-acmf'), /unknown API key/);
  await assert.rejects(auth.authenticate(undefined), /missing or malformed/);
  await assert.rejects(auth.authenticate('Basic abc'), /missing or malformed/);
  await assert.rejects(auth.authenticate(['Bearer demo-acme', 'Bearer demo-acme']), /more than one/);
});

test('valid JWTs yield tenant, subject and actor', async () => {
  const { auth, sign } = await setup();
  const p = await auth.authenticate(`Bearer ${await sign({ tenant: 'acme', act: { sub: 'crm-app' }, scope: 'tasks:write' })}`);
  assert.deepEqual(p, { tenant: 'acme', subject: 'carol', actor: 'crm-app', scopes: ['tasks:write'] });
});

test('alg none, wrong signature, issuer, audience, expired and not-yet-valid JWTs are refused', async () => {
  const { auth, sign } = await setup();
  const none = new UnsecuredJWT({ tenant: 'acme' })
    .setIssuer('https://idp.test')
    .setAudience('agent-mesh')
    .setSubject('x')
    .setExpirationTime('5m')
    .encode();
  await assert.rejects(auth.authenticate(`Bearer ${none}`), /invalid token/);
  const other = await setup();
  await assert.rejects(auth.authenticate(`Bearer ${await other.sign({ tenant: 'acme' })}`), /invalid token/);
  await assert.rejects(auth.authenticate(`Bearer ${await sign({ tenant: 'acme' }, { iss: 'https://evil.test' })}`), /invalid token.*iss/);
  await assert.rejects(auth.authenticate(`Bearer ${await sign({ tenant: 'acme' }, { aud: 'other' })}`), /invalid token.*aud/);
  await assert.rejects(
    auth.authenticate(`Bearer ${await sign({ tenant: 'acme' }, { exp: Math.floor(Date.now() / 1000) - 3600 })}`),
    /invalid token.*exp/,
  );
  await assert.rejects(
    auth.authenticate(`Bearer ${await sign({ tenant: 'acme' }, { nbf: Math.floor(Date.now() / 1000) + 3600 })}`),
    /invalid token.*nbf/,
  );
  await assert.rejects(auth.authenticate(`Bearer ${await sign({})}`), /no tenant claim/);
  await assert.rejects(auth.authenticate(`Bearer ${await sign({ tenant: 'ACME:x' })}`), /invalid tenant/);
});

test('bad AUTH_API_KEYS is a config error naming the variable', () => {
  assert.throws(() => loadAuthOptions({ AUTH_API_KEYS: 'short=acme:alice' }), /AUTH_API_KEYS/);
  assert.throws(() => loadAuthOptions({ AUTH_JWKS_JSON: '{}' }), /AUTH_JWKS_JSON/);
});
