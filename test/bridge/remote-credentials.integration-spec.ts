import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { MeshError } from '@mesh/contract';
import { EgressPolicy } from '@mesh/egress';
import { remoteCredentials, type RemoteCredentialsSpec } from '@mesh/agent-runtime';

// A real OAuth 2.0 authorization server (oidc-provider) issues client-credentials tokens to the
// bridge's credentials: opaque tokens by default, a JWT for the remote agent's resource (RFC 8707).
// The token lifetime is real; the client's clock is moved forward instead of waiting for it.

const SECRET = 'bridge-secret-7f3a';
const AUDIENCE = 'https://weather-agent.example/';
const TTL_S = 120;

const server = http.createServer();
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
after(() => server.close());
const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const signingKey = { ...(await exportJWK(privateKey)), kid: 'as-1', alg: 'ES256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'mesh-bridge',
      client_secret: SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'agents.call',
      // The server signs with ES256 only (its one key).
      id_token_signed_response_alg: 'ES256',
    },
  ],
  cookies: { keys: ['remote-credentials-spec'] },
  scopes: ['agents.call'],
  jwks: { keys: [signingKey] },
  ttl: { ClientCredentials: TTL_S },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined as unknown as string,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource !== AUDIENCE) throw new Error('unknown resource');
        return {
          scope: 'agents.call',
          audience: resource,
          accessTokenTTL: TTL_S,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
});
server.on('request', provider.callback());
const tokenUrl = `${issuer}/token`;

/** Tokens the server issued, counted from its own events. */
let grants = 0;
provider.on('grant.success', () => {
  grants += 1;
});

const egress = new EgressPolicy({ allowCidrs: ['127.0.0.1/32'] });
const env = { BRIDGE_CLIENT_SECRET: SECRET };
const spec = (patch: Partial<Extract<RemoteCredentialsSpec, { type: 'oauth2-client-credentials' }>> = {}): RemoteCredentialsSpec => ({
  type: 'oauth2-client-credentials',
  tokenUrl,
  clientId: 'mesh-bridge',
  clientSecret: { env: 'BRIDGE_CLIENT_SECRET' },
  scope: 'agents.call',
  ...patch,
});

const bearer = (headers: Record<string, string>) => {
  const m = /^Bearer (\S+)$/.exec(headers.authorization ?? '');
  assert.ok(m, `a bearer token: ${JSON.stringify(headers)}`);
  return m[1];
};

/** The server's record of an opaque token, when it still considers the token valid. */
async function activeAtServer(token: string): Promise<boolean> {
  const found = await provider.ClientCredentials.find(token);
  return found !== undefined && !found.isExpired;
}

test('a token is obtained from the server and reused for later requests', async () => {
  const creds = remoteCredentials(spec(), { env, egress });
  const before = grants;
  const first = bearer(await creds.headers());
  assert.ok(await activeAtServer(first), 'the server issued it');
  assert.equal((await provider.ClientCredentials.find(first))?.scope, 'agents.call');
  assert.equal(bearer(await creds.headers()), first);
  assert.equal(grants - before, 1);
  creds.close();
});

test('concurrent first requests share one token request', async () => {
  const creds = remoteCredentials(spec(), { env, egress });
  const before = grants;
  const tokens = await Promise.all(Array.from({ length: 8 }, async () => bearer(await creds.headers())));
  assert.equal(new Set(tokens).size, 1);
  assert.equal(grants - before, 1);
  creds.close();
});

test('the token is refreshed before it expires', async () => {
  let skew = 0;
  const creds = remoteCredentials(spec(), { env, egress, now: () => Date.now() + skew });
  const first = bearer(await creds.headers());
  skew = (TTL_S - 25) * 1000; // past the refresh point (30 s before expiry), not yet expired
  const before = grants;
  const second = bearer(await creds.headers());
  assert.notEqual(second, first);
  assert.equal(grants - before, 1);
  // The old token had not lapsed at the server when it was replaced.
  assert.ok(await activeAtServer(first));
  assert.ok(await activeAtServer(second));
  creds.close();
});

test('after the remote rejects a token (here: revoked), exactly one fresh token is fetched', async () => {
  const creds = remoteCredentials(spec(), { env, egress });
  const first = bearer(await creds.headers());
  const revoke = await fetch(`${issuer}/token/revocation`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`mesh-bridge:${SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token: first }),
  });
  assert.equal(revoke.status, 200);
  assert.equal(await activeAtServer(first), false);
  creds.rejected();
  const before = grants;
  const again = await Promise.all(Array.from({ length: 4 }, async () => bearer(await creds.headers())));
  assert.equal(new Set(again).size, 1);
  assert.notEqual(again[0], first);
  assert.ok(await activeAtServer(again[0]));
  assert.equal(grants - before, 1);
  creds.close();
});

test('an audience asks for a token bound to the remote agent (RFC 8707 resource)', async () => {
  const creds = remoteCredentials(spec({ audience: AUDIENCE }), { env, egress });
  const token = bearer(await creds.headers());
  const claims = decodeJwt(token);
  assert.equal(claims.aud, AUDIENCE);
  assert.equal(claims.scope, 'agents.call');
  assert.equal(claims.client_id, 'mesh-bridge');
  creds.close();
});

test('the client secret is read at each token request: a rotated mounted file is used', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bridge-secret-'));
  try {
    const file = join(dir, 'client-secret');
    await writeFile(file, 'not-the-secret\n');
    const creds = remoteCredentials(spec({ clientSecret: { file } }), { egress });
    await assert.rejects(creds.headers(), (err: unknown) => err instanceof MeshError && err.code === 'UNAUTHENTICATED');
    await writeFile(file, `${SECRET}\n`);
    assert.ok(await activeAtServer(bearer(await creds.headers())));
    creds.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an unknown client or a secret the server no longer accepts is a clear error without the secret', async () => {
  const wrongSecret = 'stale-secret-9c1e';
  for (const [patch, e] of [
    [{ clientId: 'nobody' }, env],
    [{}, { BRIDGE_CLIENT_SECRET: wrongSecret }],
  ] as const) {
    const creds = remoteCredentials(spec(patch), { env: e, egress });
    await assert.rejects(creds.headers(), (err: unknown) => {
      assert.ok(err instanceof MeshError);
      assert.equal(err.code, 'UNAUTHENTICATED');
      assert.equal(err.retryable, false);
      assert.match(err.message, new RegExp(`OAuth token request to ${tokenUrl} was refused: invalid_client.*HTTP 401`));
      assert.ok(!err.message.includes(SECRET) && !err.message.includes(wrongSecret));
      return true;
    });
  }
});

test('a token URL the egress policy does not allow is refused before any request', async () => {
  const before = grants;
  const creds = remoteCredentials(spec(), { env, egress: new EgressPolicy() });
  await assert.rejects(creds.headers(), (err: unknown) => {
    assert.ok(err instanceof MeshError);
    assert.equal(err.code, 'EGRESS_REFUSED');
    assert.match(err.message, /127\.0\.0\.1 \(loopback\) is not a public address/);
    return true;
  });
  const httpsOnly = remoteCredentials(spec(), { env, egress: new EgressPolicy({ allowCidrs: ['127.0.0.1/32'], schemes: ['https:'] }) });
  await assert.rejects(httpsOnly.headers(), /scheme http: is not allowed/);
  assert.equal(grants, before);
});

test('a missing secret is a configuration error naming the variable', async () => {
  const creds = remoteCredentials(spec(), { env: {}, egress });
  await assert.rejects(
    creds.headers(),
    (err: unknown) =>
      err instanceof MeshError && err.code === 'CONFIG_INVALID' && /secret env var "BRIDGE_CLIENT_SECRET" is not set/.test(err.message),
  );
});
