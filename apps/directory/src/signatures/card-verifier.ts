import type { JWK } from 'jose';
import { AgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { DirectoryError } from '../common/directory.exception.js';

/** Trusted signing keys of submitted cards: per tenant, and `*` for keys every tenant may use. */
export type TrustedKeys = Record<string, { keys: JWK[] }>;

/** Verifier options: the trusted keys and which tenants must sign their cards. */
export interface CardVerifierOptions {
  trusted: TrustedKeys;
  /** Tenants whose cards must carry a valid signature; `*` means all. */
  requireSignedTenants: string[];
}

/**
 * Verifies submitted card signatures (JWS over the RFC 8785 canonical card, via the SDK's
 * `verifyAgentCardSignature`), looking keys up by `kid` in the tenant's keys, then in `*`.
 */
export class CardVerifier {
  constructor(private readonly opts: CardVerifierOptions) {}

  private findKey(tenant: string, kid: string): JWK | undefined {
    for (const set of [this.opts.trusted[tenant], this.opts.trusted['*']]) {
      const key = set?.keys?.find((k) => k.kid === kid);
      if (key) return key;
    }
    return undefined;
  }

  requiresSignature(tenant: string): boolean {
    return this.opts.requireSignedTenants.includes('*') || this.opts.requireSignedTenants.includes(tenant);
  }

  /**
   * Passes when every signature on the card verifies (so a stale or foreign signature cannot ride
   * along with a good one), and when the tenant's policy is met. Throws with a clear reason otherwise.
   */
  async check(tenant: string, card: AgentCard): Promise<{ verifiedKids: string[] }> {
    const signatures = card.signatures ?? [];
    if (signatures.length === 0) {
      if (this.requiresSignature(tenant)) {
        throw new DirectoryError('SIGNATURE_REQUIRED', `tenant "${tenant}" requires signed cards`, [
          { field: 'card.signatures', message: 'a valid signature is required by the tenant policy' },
        ]);
      }
      return { verifiedKids: [] };
    }
    const verifiedKids: string[] = [];
    // The SDK canonicalises with AgentCard.fromJSON: it must see the JSON form (see CardSigner.sign).
    const json = AgentCard.toJSON(card) as AgentCard;
    for (const [i, sig] of signatures.entries()) {
      let missingKid: string | undefined;
      const verify = verifyAgentCardSignature(async (kid) => {
        const jwk = this.findKey(tenant, kid);
        if (!jwk) {
          missingKid = kid;
          throw new Error(`no trusted key "${kid}"`);
        }
        return jwk;
      });
      try {
        await verify({ ...json, signatures: [sig] });
      } catch {
        const reason =
          missingKid !== undefined
            ? `no trusted key with kid "${missingKid}" for tenant "${tenant}"`
            : 'signature does not match the card (the card was changed after signing, or the header is malformed)';
        throw new DirectoryError('SIGNATURE_INVALID', `card signature ${i} is invalid: ${reason}`, [
          { field: `card.signatures[${i}]`, message: reason },
        ]);
      }
      verifiedKids.push(this.kidOf(sig.protected));
    }
    return { verifiedKids };
  }

  private kidOf(protectedHeader: string): string {
    try {
      return String((JSON.parse(Buffer.from(protectedHeader, 'base64url').toString('utf8')) as { kid?: unknown }).kid);
    } catch {
      return '?';
    }
  }
}
