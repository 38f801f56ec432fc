import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK, generateKeyPair } from 'jose';
import { verifyAgentCardSignature, AgentCard } from '@a2a-js/sdk';
import { CardSigner } from './card-signer.js';

const card = AgentCard.fromJSON({ name: 'A', description: 'd', version: '1', capabilities: {}, skills: [] });

test('EdDSA and ES256 keys sign cards the SDK verifies; the JWKS has no private part', async () => {
  for (const alg of ['EdDSA', 'ES256'] as const) {
    const { privateKey } = await generateKeyPair(alg === 'EdDSA' ? 'Ed25519' : 'ES256', { extractable: true });
    const signer = await CardSigner.fromJwk({ ...(await exportJWK(privateKey)), kid: `k-${alg}` });
    assert.equal(signer.alg, alg, 'alg inferred from the curve');
    const signed = await signer.sign(card);
    const [jwk] = signer.jwks().keys;
    assert.equal(jwk.d, undefined);
    await verifyAgentCardSignature(async () => jwk)(signed);
  }
});

test('a signing key without kid, private part or a supported curve is a config error', async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const priv = await exportJWK(privateKey);
  await assert.rejects(CardSigner.fromJwk(priv), /"kid" is required/);
  await assert.rejects(CardSigner.fromJwk({ ...(await exportJWK(publicKey)), kid: 'k' }), /private key/);
  await assert.rejects(CardSigner.fromJwk({ ...priv, kid: 'k', alg: 'RS256' }), /ES256 \(P-256\) or EdDSA/);
});
