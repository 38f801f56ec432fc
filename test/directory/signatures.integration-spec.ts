import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateAgentCardSignature, type AgentCard } from '@a2a-js/sdk';
import { card, client, KEYS, keyPair, startTestDirectory } from './directory-fixtures.js';

// acme signs with its own key; globex must sign (tenant policy) and may use the shared key.
const acmeKey = await keyPair('acme-k1');
const sharedKey = await keyPair('shared-k1');
const strangerKey = await keyPair('acme-k1'); // same kid, different key: a forgery
const { dir } = await startTestDirectory('signatures', {
  DIRECTORY_TRUSTED_JWKS: JSON.stringify({ acme: { keys: [acmeKey.publicJwk] }, '*': { keys: [sharedKey.publicJwk] } }),
  DIRECTORY_REQUIRE_SIGNED_TENANTS: 'globex',
});
const api = client(dir.url);

const sign = (c: Record<string, unknown>, key: { privateJwk: Record<string, unknown> }, kid: string) =>
  generateAgentCardSignature(key.privateJwk, { alg: 'ES256', kid, typ: 'JOSE' })(c as unknown as AgentCard) as unknown as Promise<
    Record<string, unknown>
  >;

test('a card signed with a trusted key is accepted and stored with its signature', async () => {
  const signed = await sign(card('Signed Acme'), acmeKey, 'acme-k1');
  const r = await api(KEYS.acme, 'POST', '/v1/agents', { card: signed });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.card.signatures.length, 1);
  const shared = await sign(card('Shared Key Acme'), sharedKey, 'shared-k1');
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { card: shared })).status, 201, 'the * keys serve every tenant');
});

test('a card changed by one byte after signing is refused with a clear reason', async () => {
  const signed = await sign(card('Tampered'), acmeKey, 'acme-k1');
  const tampered = { ...signed, description: `${String(signed.description).slice(0, -1)}X` };
  const r = await api(KEYS.acme, 'POST', '/v1/agents', { card: tampered });
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'SIGNATURE_INVALID');
  assert.equal(r.body.errors[0].field, 'card.signatures[0]');
  assert.match(r.body.detail, /does not match the card/);
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/tampered')).status, 404, 'nothing stored');
});

test('a signature covers the security schemes: a signed card with them is accepted, one added after signing is refused', async () => {
  const schemes = {
    key: { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } },
    oauth: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://t.example/token', scopes: { read: 'r' } } } } },
  };
  const signed = await sign(card('Secured Acme', { securitySchemes: schemes }), acmeKey, 'acme-k1');
  const r = await api(KEYS.acme, 'POST', '/v1/agents', { card: signed });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const plain = await sign(card('Scheme Added'), acmeKey, 'acme-k1');
  const added = await api(KEYS.acme, 'POST', '/v1/agents', { card: { ...plain, securitySchemes: { key: schemes.key } } });
  assert.equal(added.status, 400, JSON.stringify(added.body));
  assert.equal(added.body.code, 'SIGNATURE_INVALID');
});

test('unknown kids, forged keys and another tenant’s key are refused', async () => {
  const forged = await sign(card('Forged'), strangerKey, 'acme-k1');
  const r1 = await api(KEYS.acme, 'POST', '/v1/agents', { card: forged });
  assert.equal(r1.status, 400);
  assert.equal(r1.body.code, 'SIGNATURE_INVALID');

  const unknown = await sign(card('Unknown Kid'), acmeKey, 'nobody');
  const r2 = await api(KEYS.acme, 'POST', '/v1/agents', { card: unknown });
  assert.equal(r2.status, 400);
  assert.match(r2.body.detail, /no trusted key with kid "nobody"/);

  // acme's key is trusted for acme only.
  const acmeSigned = await sign(card('Globex With Acme Key'), acmeKey, 'acme-k1');
  const r3 = await api(KEYS.globex, 'POST', '/v1/agents', { card: acmeSigned });
  assert.equal(r3.status, 400);
  assert.match(r3.body.detail, /no trusted key with kid "acme-k1" for tenant "globex"/);
});

test('a tenant policy can require signatures; updates are checked the same way', async () => {
  const unsigned = await api(KEYS.globex, 'POST', '/v1/agents', { card: card('Globex Unsigned') });
  assert.equal(unsigned.status, 400);
  assert.equal(unsigned.body.code, 'SIGNATURE_REQUIRED');
  assert.equal(unsigned.body.errors[0].field, 'card.signatures');

  const signed = await sign(card('Globex Signed'), sharedKey, 'shared-k1');
  const r = await api(KEYS.globex, 'POST', '/v1/agents', { card: signed });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const update = await api(KEYS.globex, 'PUT', '/v1/agents/globex-signed', { card: card('Globex Signed', { version: '2' }) });
  assert.equal(update.status, 400);
  assert.equal(update.body.code, 'SIGNATURE_REQUIRED');
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/globex-signed')).body.version, 1);
});

test('without a platform key, served cards are unsigned and the JWKS is empty', async () => {
  const r = await api(KEYS.acme, 'GET', '/v1/agents/signed-acme/card');
  assert.equal(r.status, 200);
  assert.equal(r.body.signatures, undefined, "the agent's own signature is dropped: it covered other interfaces");
  assert.deepEqual(await (await fetch(`${dir.url}/.well-known/jwks.json`)).json(), { keys: [] });
});
