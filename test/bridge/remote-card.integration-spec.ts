import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { exportJWK, FlattenedSign, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { AgentCard, canonicalizeAgentCard } from '@a2a-js/sdk';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { MeshError } from '@mesh/contract';
import { EgressPolicy } from '@mesh/egress';
import { fetchRemoteCard, remoteCredentials, RemoteCardRefresher, type RemoteAgentCard } from '@mesh/agent-runtime';

// A remote agent's own server: the official SDK's express handler serves its card (a signed card is
// signed here with jose: a JWS over the RFC 8785 canonical card), and a JWKS route publishes the key.

const egress = new EgressPolicy({ allowCidrs: ['127.0.0.1/32'] });

/** A card in its A2A 1.0 JSON form. */
const cardJson = (
  version: string,
  skills = [{ id: 'forecast', name: 'Forecast', description: 'Weather forecasts', tags: ['weather'] }],
) => ({
  name: 'Weather Agent',
  description: 'Forecasts for any city',
  version,
  supportedInterfaces: [{ url: 'https://weather.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills,
});

async function keyPair(kid: string): Promise<{ privateKey: CryptoKey; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** The card with a detached-payload JWS over its canonical form (A2A 1.0 §8.4). */
async function sign(card: Record<string, unknown>, key: CryptoKey, kid: string): Promise<Record<string, unknown>> {
  const payload = new TextEncoder().encode(canonicalizeAgentCard(card as unknown as AgentCard));
  const jws = await new FlattenedSign(payload).setProtectedHeader({ alg: 'ES256', kid, typ: 'JOSE' }).sign(key);
  return { ...card, signatures: [{ protected: jws.protected, signature: jws.signature }] };
}

const remoteKey = await keyPair('weather-2026');
const strangerKey = await keyPair('stranger');

/** What the remote serves at its card path (JSON form), changed by the tests. */
let served: Record<string, unknown> = cardJson('1.0.0');
let requireToken: string | undefined;
let refusals = 0;
const app = express();
app.use('/.well-known/agent-card.json', (req, res, next) => {
  if (requireToken && req.header('authorization') !== `Bearer ${requireToken}`) {
    refusals += 1;
    res.status(401).json({ error: 'unauthenticated' });
    return;
  }
  next();
});
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => AgentCard.fromJSON(served) }));
app.get('/jwks.json', (_req, res) => {
  res.json({ keys: [remoteKey.publicJwk] });
});
app.get('/not-json', (_req, res) => {
  res.type('text/html').send('<html>hello</html>');
});
app.get('/not-a-card', (_req, res) => {
  res.json({ hello: 'world' });
});
const server: Server = await new Promise((resolve) => {
  const s = app.listen(0, '127.0.0.1', () => resolve(s));
});
after(() => server.close());
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const cardUrl = `${base}/.well-known/agent-card.json`;
const trust = { jwksUrl: `${base}/jwks.json` };

const meshError = (code: string, pattern: RegExp) => (err: unknown) => {
  assert.ok(err instanceof MeshError, String(err));
  assert.equal(err.code, code, err.message);
  assert.match(err.message, pattern);
  return true;
};

test('a signed card is verified against the configured JWKS and returned as served', async () => {
  served = await sign(cardJson('1.0.0'), remoteKey.privateKey, 'weather-2026');
  const card = await fetchRemoteCard(cardUrl, { egress, trust });
  assert.equal(card.name, 'Weather Agent');
  assert.equal(card.version, '1.0.0');
  assert.deepEqual(
    card.skills?.map((s) => s.id),
    ['forecast'],
  );
  assert.equal(card.signatures?.length, 1);
  // Inline keys work the same.
  await fetchRemoteCard(cardUrl, { egress, trust: { jwks: { keys: [remoteKey.publicJwk] } } });
});

test('a card changed after signing is refused', async () => {
  const signed = await sign(cardJson('1.0.0'), remoteKey.privateKey, 'weather-2026');
  served = { ...signed, skills: [{ id: 'forecast', name: 'Forecast', description: 'Also wires money', tags: ['weather'] }] };
  await assert.rejects(
    fetchRemoteCard(cardUrl, { egress, trust }),
    meshError('SIGNATURE_INVALID', /signature 0 is invalid: it does not match the card/),
  );
  // A good signature does not carry a bad one along.
  const other = await sign(cardJson('0.9.0'), remoteKey.privateKey, 'weather-2026');
  served = { ...signed, signatures: [...(signed.signatures as unknown[]), ...(other.signatures as unknown[])] };
  await assert.rejects(fetchRemoteCard(cardUrl, { egress, trust }), meshError('SIGNATURE_INVALID', /signature 1 is invalid/));
});

test('a card signed by a key nobody trusts is refused, as is a signed card with no keys configured', async () => {
  served = await sign(cardJson('1.0.0'), strangerKey.privateKey, 'stranger');
  await assert.rejects(fetchRemoteCard(cardUrl, { egress, trust }), meshError('SIGNATURE_INVALID', /no trusted key with kid "stranger"/));
  // A key under a trusted kid but not the trusted key.
  served = await sign(cardJson('1.0.0'), strangerKey.privateKey, 'weather-2026');
  await assert.rejects(fetchRemoteCard(cardUrl, { egress, trust }), meshError('SIGNATURE_INVALID', /does not match the card/));
  served = await sign(cardJson('1.0.0'), remoteKey.privateKey, 'weather-2026');
  await assert.rejects(fetchRemoteCard(cardUrl, { egress }), meshError('SIGNATURE_INVALID', /signed but no trusted keys are configured/));
});

test('an unsigned card is accepted, unless signed cards are required', async () => {
  served = cardJson('1.0.0');
  const card = await fetchRemoteCard(cardUrl, { egress, trust });
  assert.deepEqual(card.signatures ?? [], []);
  await assert.rejects(
    fetchRemoteCard(cardUrl, { egress, trust: { ...trust, requireSigned: true } }),
    meshError('SIGNATURE_REQUIRED', /is not signed, and a signed card is required/),
  );
});

test('an answer that is not JSON, or not a card, is refused clearly', async () => {
  await assert.rejects(fetchRemoteCard(`${base}/not-json`, { egress }), meshError('CONTRACT_VIOLATION', /is not JSON/));
  await assert.rejects(
    fetchRemoteCard(`${base}/not-a-card`, { egress }),
    meshError('CONTRACT_VIOLATION', /is not an A2A 1.0 agent card: name: .*supportedInterfaces: /),
  );
  await assert.rejects(fetchRemoteCard(`${base}/missing`, { egress }), meshError('NOT_FOUND', /not found \(HTTP 404\)/));
});

test('the card URL goes through the egress policy', async () => {
  await assert.rejects(
    fetchRemoteCard(cardUrl, { egress: new EgressPolicy() }),
    meshError('EGRESS_REFUSED', /127\.0\.0\.1 \(loopback\) is not a public address/),
  );
});

test('credentials are sent with the card request; a 401 gets one fresh attempt, then a clear error', async () => {
  served = cardJson('1.0.0');
  requireToken = 'card-token-1';
  try {
    const env: NodeJS.ProcessEnv = { REMOTE_TOKEN: 'card-token-1' };
    const creds = remoteCredentials({ type: 'bearer', token: { env: 'REMOTE_TOKEN' } }, { egress, env });
    assert.equal((await fetchRemoteCard(cardUrl, { egress, credentials: creds })).name, 'Weather Agent');
    assert.equal(refusals, 0);
    env.REMOTE_TOKEN = 'stale';
    await assert.rejects(
      fetchRemoteCard(cardUrl, { egress, credentials: creds }),
      meshError('UNAUTHENTICATED', /refused the credentials \(HTTP 401\)/),
    );
    assert.equal(refusals, 2, 'one fresh attempt after the 401');
    await assert.rejects(fetchRemoteCard(cardUrl, { egress }), meshError('UNAUTHENTICATED', /HTTP 401/));
    assert.equal(refusals, 3, 'no credentials: nothing to refresh');
  } finally {
    requireToken = undefined;
  }
});

test('the refresher hands over a changed card and keeps the last good one when the remote fails', async () => {
  served = await sign(cardJson('1.0.0'), remoteKey.privateKey, 'weather-2026');
  const changes: RemoteAgentCard[] = [];
  let notify: (() => void) | undefined;
  const changed = () => new Promise<void>((resolve) => (notify = resolve));
  const refresher = new RemoteCardRefresher({
    cardUrl,
    intervalMs: 20,
    egress,
    trust,
    onChange: (card) => {
      changes.push(card);
      notify?.();
    },
  });
  try {
    let next = changed();
    refresher.start();
    await next;
    assert.equal(changes[0].version, '1.0.0');

    // A tampered card never replaces the good one; a new signed version does.
    served = { ...(served as object), version: '6.6.6' };
    await refresher.refresh();
    assert.equal(refresher.card?.version, '1.0.0');
    next = changed();
    served = await sign(
      cardJson('1.1.0', [
        { id: 'forecast', name: 'Forecast', description: 'Weather forecasts', tags: ['weather'] },
        { id: 'alerts', name: 'Storm alerts', description: 'Severe weather alerts', tags: ['weather'] },
      ]),
      remoteKey.privateKey,
      'weather-2026',
    );
    await next;
    assert.deepEqual(
      changes.map((c) => [c.version, c.skills?.map((s) => s.id)]),
      [
        ['1.0.0', ['forecast']],
        ['1.1.0', ['forecast', 'alerts']],
      ],
    );
    assert.equal(refresher.card?.version, '1.1.0');
  } finally {
    refresher.stop();
  }
});
