import { exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey, type KeyObject } from 'jose';
import { AgentCard, generateAgentCardSignature } from '@a2a-js/sdk';
import { MeshError } from '@mesh/contract';

const ALGS = new Set(['ES256', 'EdDSA']);

/** Signs served cards with the platform key and publishes its public half as a JWKS. */
export class CardSigner {
  private constructor(
    private readonly key: CryptoKey | KeyObject,
    readonly kid: string,
    readonly alg: string,
    readonly publicJwk: JWK,
  ) {}

  /** From a private JWK (with `kid`; `alg` ES256 or EdDSA, inferred from the curve when absent). */
  static async fromJwk(jwk: JWK): Promise<CardSigner> {
    const alg = jwk.alg ?? (jwk.crv === 'P-256' ? 'ES256' : jwk.crv === 'Ed25519' ? 'EdDSA' : undefined);
    if (!alg || !ALGS.has(alg))
      throw new MeshError('CONFIG_INVALID', 'DIRECTORY_SIGNING_JWK: alg must be ES256 (P-256) or EdDSA (Ed25519)');
    if (!jwk.kid) throw new MeshError('CONFIG_INVALID', 'DIRECTORY_SIGNING_JWK: a "kid" is required');
    if (!jwk.d) throw new MeshError('CONFIG_INVALID', 'DIRECTORY_SIGNING_JWK: a private key ("d") is required');
    // Asymmetric JWKs import as a CryptoKey, never as raw bytes.
    const key = (await importJWK(jwk, alg)) as CryptoKey;
    const { d: _d, ...pub } = jwk;
    return new CardSigner(key, jwk.kid, alg, { ...pub, alg, use: 'sig' });
  }

  /** A throw-away ES256 key (development mode only): served cards change kid on every start. */
  static async ephemeral(): Promise<CardSigner> {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    return CardSigner.fromJwk({ ...jwk, kid: `dev-${Date.now().toString(36)}`, alg: 'ES256' });
  }

  /** The card with one platform signature (any signatures it carried are dropped first). */
  async sign(card: AgentCard): Promise<AgentCard> {
    // The SDK canonicalises its argument with AgentCard.fromJSON: it must be the card's JSON form,
    // or the oneofs (every security scheme) decode to nothing and the signature leaves them out.
    const json = AgentCard.toJSON({ ...card, signatures: [] }) as AgentCard;
    const signed = await generateAgentCardSignature(this.key, { alg: this.alg, kid: this.kid, typ: 'JOSE' })(json);
    return { ...card, signatures: signed.signatures };
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }
}
