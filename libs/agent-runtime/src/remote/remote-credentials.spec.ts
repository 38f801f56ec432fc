import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeshError } from '@mesh/contract';
import { EgressPolicy } from '@mesh/egress';
import {
  parseRemoteCredentialsSpec,
  readSecret,
  refreshDelayMs,
  remoteCredentials,
  remoteCredentialsSpecSchema,
  TokenCache,
  type IssuedToken,
} from './remote-credentials.js';

const egress = new EgressPolicy();
const configInvalid = (pattern: RegExp) => (err: unknown) =>
  err instanceof MeshError && err.code === 'CONFIG_INVALID' && pattern.test(err.message);

test('every kind of spec parses, with secrets by reference', () => {
  for (const spec of [
    { type: 'none' },
    { type: 'bearer', token: { env: 'REMOTE_TOKEN' } },
    { type: 'api-key', header: 'X-Api-Key', key: { file: '/run/secrets/key' } },
    {
      type: 'oauth2-client-credentials',
      tokenUrl: 'https://auth.example.com/oauth/token',
      clientId: 'mesh',
      clientSecret: { env: 'CLIENT_SECRET' },
      scope: 'agents.call',
      audience: 'https://agent.example.com',
    },
  ]) {
    assert.deepEqual(remoteCredentialsSpecSchema.parse(spec), spec);
  }
});

test('a secret given by value is refused, and the value is never echoed', () => {
  for (const token of ['s3cr3t-value', { value: 's3cr3t-value' }, { env: 'OK', value: 's3cr3t-value' }]) {
    assert.throws(
      () => parseRemoteCredentialsSpec({ type: 'bearer', token }),
      (err: unknown) =>
        configInvalid(/token: a secret is given by reference only/)(err) && !(err as Error).message.includes('s3cr3t-value'),
    );
  }
  assert.throws(() => parseRemoteCredentialsSpec({ type: 'bearer', token: { env: 'not a name' } }), configInvalid(/token: a secret/));
  assert.throws(() => parseRemoteCredentialsSpec({ type: 'bearer', token: { file: 'relative/path' } }), configInvalid(/token: a secret/));
});

test('bad specs name the field that is wrong', () => {
  assert.throws(() => parseRemoteCredentialsSpec({ type: 'basic' }), configInvalid(/type must be one of: none, bearer/));
  assert.throws(() => parseRemoteCredentialsSpec(null), configInvalid(/type must be one of/));
  assert.throws(
    () => parseRemoteCredentialsSpec({ type: 'api-key', header: 'X Key', key: { env: 'K' } }),
    configInvalid(/header: must be an HTTP header name/),
  );
  assert.throws(
    () => parseRemoteCredentialsSpec({ type: 'api-key', header: 'Content-Length', key: { env: 'K' } }),
    configInvalid(/header: is a header the protocol sets itself/),
  );
  const oauth = { type: 'oauth2-client-credentials', tokenUrl: 'https://a.example/t', clientId: 'c', clientSecret: { env: 'S' } };
  assert.throws(
    () => parseRemoteCredentialsSpec({ ...oauth, tokenUrl: 'ftp://a.example/t' }),
    configInvalid(/tokenUrl: must be an http\(s\) URL/),
  );
  assert.throws(() => parseRemoteCredentialsSpec({ ...oauth, clientId: '' }), configInvalid(/clientId:/));
  assert.throws(() => parseRemoteCredentialsSpec({ ...oauth, extra: 1 }), configInvalid(/extra/));
  assert.throws(() => remoteCredentials({ ...oauth, tokenUrl: 'nope' } as never, { egress }), configInvalid(/tokenUrl/));
});

test('secrets are read at use: a rotated file is picked up, a missing one is named', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'remote-secret-'));
  try {
    const file = join(dir, 'token');
    await writeFile(file, 'first\n');
    const creds = remoteCredentials({ type: 'bearer', token: { file } }, { egress });
    assert.deepEqual(await creds.headers(), { authorization: 'Bearer first' });
    await writeFile(file, 'second');
    assert.deepEqual(await creds.headers(), { authorization: 'Bearer second' });
    await rm(file);
    await assert.rejects(creds.headers(), configInvalid(new RegExp(`secret file "${file}" cannot be read \\(ENOENT\\)`)));
    await writeFile(file, '\n');
    await assert.rejects(readSecret({ file }), configInvalid(/is empty/));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('env secrets come from the given environment; a missing one is named, never guessed', async () => {
  const env = { API_KEY: 'k-123' };
  const creds = remoteCredentials({ type: 'api-key', header: 'X-Api-Key', key: { env: 'API_KEY' } }, { egress, env });
  assert.deepEqual(await creds.headers(), { 'x-api-key': 'k-123' });
  const missing = remoteCredentials({ type: 'bearer', token: { env: 'NOT_SET_ANYWHERE' } }, { egress, env });
  await assert.rejects(missing.headers(), configInvalid(/secret env var "NOT_SET_ANYWHERE" is not set/));
  assert.deepEqual(await remoteCredentials({ type: 'none' }, { egress }).headers(), {});
});

test('a token is refreshed at 80% of its life or 30 s before expiry, whichever first, never before half', () => {
  assert.equal(refreshDelayMs(3_600_000), 2_880_000); // 80%
  assert.equal(refreshDelayMs(120_000), 90_000); // 30 s before
  assert.equal(refreshDelayMs(10_000), 5_000); // half: a short token is not fetched per request
});

/** A token endpoint stand-in whose answers the test releases one by one. */
function fakeEndpoint() {
  const pending: Array<{ resolve: (t: IssuedToken) => void; reject: (e: Error) => void; signal: AbortSignal }> = [];
  let issued = 0;
  const fetchToken = (signal: AbortSignal) =>
    new Promise<IssuedToken>((resolve, reject) => {
      pending.push({ resolve, reject, signal });
    });
  const answer = (expires_in?: number) => {
    const next = pending.shift();
    assert.ok(next, 'a token request is pending');
    issued += 1;
    next.resolve({ access_token: `t${issued}`, token_type: 'bearer', expires_in });
  };
  const fail = (message = 'token server down') => {
    const next = pending.shift();
    assert.ok(next, 'a token request is pending');
    next.reject(new MeshError('UNAVAILABLE', message, { retryable: true }));
  };
  return { fetchToken, answer, fail, pending };
}

const settle = () => new Promise((r) => setImmediate(r));

test('concurrent callers share one token request, and the token is reused until its refresh time', async () => {
  let now = 1_000_000;
  const ep = fakeEndpoint();
  const cache = new TokenCache(ep.fetchToken, { now: () => now });
  const callers = Array.from({ length: 5 }, () => cache.token());
  await settle();
  assert.equal(ep.pending.length, 1);
  ep.answer(100);
  assert.deepEqual(await Promise.all(callers), Array(5).fill('Bearer t1'));
  now += 49_999; // refresh at max(50 s, min(80 s, 70 s)) = 70 s
  assert.equal(await cache.token(), 'Bearer t1');
  now += 20_001;
  const refreshed = cache.token();
  const second = cache.token();
  await settle();
  assert.equal(ep.pending.length, 1);
  ep.answer(100);
  assert.equal(await refreshed, 'Bearer t2');
  assert.equal(await second, 'Bearer t2');
});

test('invalidate (the remote said 401) makes the next caller fetch a fresh token', async () => {
  const ep = fakeEndpoint();
  const cache = new TokenCache(ep.fetchToken);
  const first = cache.token();
  await settle();
  ep.answer(3600);
  assert.equal(await first, 'Bearer t1');
  cache.invalidate();
  const next = cache.token();
  await settle();
  assert.equal(ep.pending.length, 1);
  ep.answer(3600);
  assert.equal(await next, 'Bearer t2');
});

test('a token without expires_in is kept until the remote rejects it', async () => {
  let now = 0;
  const ep = fakeEndpoint();
  const cache = new TokenCache(ep.fetchToken, { now: () => now });
  const first = cache.token();
  await settle();
  ep.answer(undefined);
  assert.equal(await first, 'Bearer t1');
  now += 365 * 24 * 3600_000;
  assert.equal(await cache.token(), 'Bearer t1');
  assert.equal(ep.pending.length, 0);
});

test('a failed refresh keeps a still-valid token; once expired, or when rejected, the error surfaces', async () => {
  let now = 0;
  const ep = fakeEndpoint();
  const cache = new TokenCache(ep.fetchToken, { now: () => now });
  const first = cache.token();
  await settle();
  ep.answer(100);
  assert.equal(await first, 'Bearer t1');
  now = 80_000; // past refresh (70 s), before expiry (100 s)
  const during = cache.token();
  await settle();
  ep.fail();
  assert.equal(await during, 'Bearer t1');
  now = 100_000;
  const after = cache.token();
  await settle();
  ep.fail('token server still down');
  await assert.rejects(after, /token server still down/);
  // No stale token after a 401 either.
  now = 80_000;
  const again = cache.token();
  await settle();
  ep.answer(100);
  assert.equal(await again, 'Bearer t2');
  cache.invalidate();
  const rejected = cache.token();
  await settle();
  ep.fail();
  await assert.rejects(rejected, /token server down/);
});

test('one caller giving up does not cancel the token request the others wait for', async () => {
  const ep = fakeEndpoint();
  const cache = new TokenCache(ep.fetchToken);
  const quitter = new AbortController();
  const a = cache.token(quitter.signal);
  const b = cache.token();
  await settle();
  quitter.abort(new Error('caller gave up'));
  await assert.rejects(a, /caller gave up/);
  assert.equal(ep.pending[0].signal.aborted, false);
  ep.answer(60);
  assert.equal(await b, 'Bearer t1');
});
