import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { Authenticator, DEMO_API_KEYS, loadAuthOptions } from '@mesh/auth';
import { InMemoryCardStream } from '@mesh/app-directory';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { startTestDirectory } from '../directory/directory-fixtures.js';
import { eventually } from '../support/infra.js';
import { holdBody } from '../support/raw-http.js';

// JWTs that must be refused by both apps (alg none, wrong signature, wrong issuer or audience,
// expired, not yet valid, no tenant), next to one good token that proves the setup accepts JWTs.
// API keys: the implementation compares SHA-256 digests with crypto.timingSafeEqual.

const ISS = 'https://idp.security.test';
const AUD = 'agent-mesh';
type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
async function es256(kid: string): Promise<{ key: PrivateKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { key: privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } };
}
const idp = await es256('idp-1');
const forger = await es256('idp-1'); // same kid, different key
const authEnv = { AUTH_JWT_ISSUER: ISS, AUTH_JWT_AUDIENCE: AUD, AUTH_JWKS_JSON: JSON.stringify({ keys: [idp.jwk] }) };

const now = Math.floor(Date.now() / 1000);
async function token(over: { iss?: string; aud?: string; exp?: number; nbf?: number; tenant?: string | null; key?: PrivateKey } = {}) {
  const claims: Record<string, unknown> = { scope: 'a2a' };
  if (over.tenant !== null) claims.tenant = over.tenant ?? 'acme';
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: 'idp-1' })
    .setSubject('alice')
    .setIssuer(over.iss ?? ISS)
    .setAudience(over.aud ?? AUD)
    .setIssuedAt(now - 60)
    .setExpirationTime(over.exp ?? now + 600);
  if (over.nbf !== undefined) jwt.setNotBefore(over.nbf);
  return jwt.sign(over.key ?? idp.key);
}
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const good = await token();
const [goodHeader, goodPayload] = good.split('.');
const BAD: Record<string, string> = {
  'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${goodPayload}.`,
  'alg none with the good signature': `${b64({ alg: 'none', kid: 'idp-1' })}.${goodPayload}.${good.split('.')[2]}`,
  'HS256 keyed with the public key': `${b64({ alg: 'HS256', kid: 'idp-1' })}.${goodPayload}.${Buffer.from('x').toString('base64url')}`,
  'wrong signature (forged key, same kid)': await token({ key: forger.key }),
  'payload changed after signing': `${goodHeader}.${b64({ ...JSON.parse(Buffer.from(goodPayload, 'base64url').toString()), tenant: 'globex' })}.${good.split('.')[2]}`,
  'wrong issuer': await token({ iss: 'https://evil.test' }),
  'wrong audience': await token({ aud: 'someone-else' }),
  expired: await token({ exp: now - 3600 }),
  'not yet valid': await token({ nbf: now + 3600 }),
  'no tenant claim': await token({ tenant: null }),
  'invalid tenant claim': await token({ tenant: '../globex' }),
};

const disp = await startTestDispatcher('sec-auth', { auth: loadAuthOptions({ AUTH_API_KEYS: DEMO_API_KEYS, ...authEnv }) });
await publishAgents(disp.kafka, disp.topics, [agentRecord('echo')]);
await eventually('echo served', async () => (await fetch(`${disp.url}/a2a/echo/.well-known/agent-card.json`)).ok);
const { dir } = await startTestDirectory('sec-auth', authEnv, { cardStream: new InMemoryCardStream() });

const rpcBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });
const viaJsonRpc = (jwt: string) =>
  rawRequest(`${disp.url}/a2a/echo`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: rpcBody,
  });
const viaRest = (jwt: string) =>
  rawRequest(`${disp.url}/a2a/echo/tasks`, { headers: { authorization: `Bearer ${jwt}`, 'a2a-version': '1.0' } });
const viaDirectory = (jwt: string) => rawRequest(`${dir.url}/v1/agents`, { headers: { authorization: `Bearer ${jwt}` } });

test('a good JWT is accepted by the dispatcher (both bindings) and the directory', async () => {
  assert.equal((await viaJsonRpc(good)).status, 200);
  assert.equal((await viaRest(good)).status, 200);
  assert.equal((await viaDirectory(good)).status, 200);
});

for (const [name, jwt] of Object.entries(BAD)) {
  test(`refused on both apps: ${name}`, async () => {
    const rpc = await viaJsonRpc(jwt);
    assert.equal(rpc.status, 401, rpc.body);
    assert.equal(rpc.headers['www-authenticate'], 'Bearer');
    const body = JSON.parse(rpc.body) as { error: { message: string } };
    assert.doesNotMatch(body.error.message, /expired|signature|issuer|audience|nbf|tenant/i, 'the reason is not echoed');
    assert.equal((await viaRest(jwt)).status, 401);
    const d = await viaDirectory(jwt);
    assert.equal(d.status, 401, d.body);
    assert.equal((JSON.parse(d.body) as { code: string }).code, 'UNAUTHENTICATED');
  });
}

test('API keys are compared as SHA-256 digests with crypto.timingSafeEqual, against every key', async () => {
  // node:crypto's ESM named exports are live copies of the CommonJS module: replacing the function
  // and syncing makes the Authenticator's `import { timingSafeEqual }` call the spy.
  const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
  const original = crypto.timingSafeEqual;
  const calls: Array<[number, number]> = [];
  crypto.timingSafeEqual = ((a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    calls.push([a.byteLength, b.byteLength]);
    return original(a, b);
  }) as typeof original;
  syncBuiltinESMExports();
  after(() => {
    crypto.timingSafeEqual = original;
    syncBuiltinESMExports();
  });
  const auth = new Authenticator(loadAuthOptions({ AUTH_API_KEYS: DEMO_API_KEYS }));
  for (const [key, ok] of [
    ['demo-acme', true],
    ['demo-acm', false],
    ['demo-acme-and-much-longer-than-any-key', false],
    ['x', false],
  ] as const) {
    calls.length = 0;
    if (ok) assert.equal((await auth.authenticate(`Bearer ${key}`)).tenant, 'acme');
    else await assert.rejects(auth.authenticate(`Bearer ${key}`), /unknown API key/);
    assert.equal(calls.length, 2, `${key}: compared against every configured key (no early exit)`);
    assert.ok(
      calls.every(([a, b]) => a === 32 && b === 32),
      `${key}: equal-length digests whatever the key length`,
    );
  }
});

test('a request without a valid credential is answered 401 before its body is read, and its connection closed', async () => {
  const v1 = { 'a2a-version': '1.0' };
  const cases: Array<[string, Record<string, string>]> = [
    ['/a2a/echo/message:send', v1],
    ['/a2a/echo', v1],
    ['/a2a/echo/message:send', { ...v1, authorization: 'Bearer not-a-key' }],
    ['/a2a/echo', { ...v1, authorization: `Bearer ${BAD.expired}` }],
  ];
  for (const [path, headers] of cases) {
    assert.deepEqual(await holdBody(disp.url, path, headers), { status: 401, closed: true }, `${path} ${JSON.stringify(headers)}`);
  }
  // Many at once: each is answered at once, none waits for its body.
  const many = await Promise.all(Array.from({ length: 100 }, () => holdBody(disp.url, '/a2a/echo/message:send', v1)));
  assert.deepEqual(new Set(many.map((r) => r?.status)), new Set([401]));
  // An authenticated caller's body is read as before: held back, it gets no answer yet.
  assert.equal(
    await holdBody(disp.url, '/a2a/echo/message:send', { ...v1, authorization: 'Bearer demo-acme' }, { waitMs: 500 }),
    undefined,
  );
});
