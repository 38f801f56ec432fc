import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';

/** A team's event-signing key: the private JWK goes to its worker, the public one to the dispatcher. */
export interface TeamEventKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

/** A new Ed25519 key pair; its kid is the RFC 7638 thumbprint of the public key. */
export async function generateTeamEventKey(): Promise<TeamEventKey> {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  return {
    kid,
    publicJwk: { ...pub, kid, alg: 'EdDSA', use: 'sig' },
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'EdDSA', use: 'sig' },
  };
}
