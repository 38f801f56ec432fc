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

test('a signature covers every security scheme: the served JSON verifies, and changing a scheme breaks it', async () => {
  // Each kind of scheme is a proto oneof, which the SDK's canonical form drops unless it is given JSON.
  const withSchemes = AgentCard.fromJSON({
    name: 'Secured',
    description: 'd',
    version: '1',
    capabilities: {},
    skills: [],
    securitySchemes: {
      key: { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } },
      http: { httpAuthSecurityScheme: { scheme: 'bearer' } },
      oauth: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://t.example/token', scopes: { read: 'r' } } } } },
      oidc: { openIdConnectSecurityScheme: { openIdConnectUrl: 'https://id.example/.well-known/openid-configuration' } },
      mtls: { mtlsSecurityScheme: { description: 'client certificate' } },
    },
  });
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const signer = await CardSigner.fromJwk({ ...(await exportJWK(privateKey)), kid: 'k' });
  const served = AgentCard.toJSON(await signer.sign(withSchemes)) as AgentCard & { securitySchemes: Record<string, unknown> };
  const [jwk] = signer.jwks().keys;
  await verifyAgentCardSignature(async () => jwk)(served);
  const changed = {
    ...served,
    securitySchemes: { ...served.securitySchemes, key: { apiKeySecurityScheme: { location: 'query', name: 'k' } } },
  } as unknown as AgentCard;
  await assert.rejects(verifyAgentCardSignature(async () => jwk)(changed), /No valid signatures/);
});

test('a signing key without kid, private part or a supported curve is a config error', async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const priv = await exportJWK(privateKey);
  await assert.rejects(CardSigner.fromJwk(priv), /"kid" is required/);
  await assert.rejects(CardSigner.fromJwk({ ...(await exportJWK(publicKey)), kid: 'k' }), /private key/);
  await assert.rejects(CardSigner.fromJwk({ ...priv, kid: 'k', alg: 'RS256' }), /ES256 \(P-256\) or EdDSA/);
});
