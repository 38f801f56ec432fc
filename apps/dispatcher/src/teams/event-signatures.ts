import { base64url, compactVerify, decodeProtectedHeader, importJWK, type CryptoKey } from 'jose';
import { canonicalJson, Headers, type Envelope } from '@mesh/contract';
import type { TeamEventKey } from './team-binding.js';
import type { TeamKeys } from './team-bindings.js';

/** Why an event was not believed (the `reason` of mesh_events_refused_total). */
export const EVENT_REFUSALS = ['unsigned', 'unknown-key', 'bad-signature', 'not-team-agent', 'revoked', 'identity-mismatch'] as const;
export type EventRefusal = (typeof EVENT_REFUSALS)[number];

/** The verdict on one team event: believed (by this team's key), or refused and why. */
export type SignatureVerdict = { ok: true; team: string; kid: string } | { ok: false; reason: EventRefusal; kid?: string };

const DETACHED_JWS = /^([A-Za-z0-9_-]+)\.\.([A-Za-z0-9_-]+)$/;

/**
 * Checks the signature of a record of the team events topic: a detached compact JWS (EdDSA) in
 * the `signature` header over the RFC 8785 canonical JSON of the envelope as decoded, by a key of
 * the live team that owns the envelope's agent. Which key is named by `kid`;
 * the signature is checked before the binding, so a refusal for the agent means the key's holder
 * really sent it.
 */
export class EventSignatures {
  private readonly imported = new WeakMap<TeamEventKey, Promise<CryptoKey | Uint8Array>>();

  constructor(private readonly keys: TeamKeys) {}

  async check(envelope: Envelope, headers: Readonly<Record<string, string>>): Promise<SignatureVerdict> {
    const signature = headers[Headers.signature];
    if (!signature) return { ok: false, reason: 'unsigned' };
    const parts = DETACHED_JWS.exec(signature);
    if (!parts) return { ok: false, reason: 'bad-signature' };
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(signature).kid;
    } catch {
      return { ok: false, reason: 'bad-signature' };
    }
    if (typeof kid !== 'string' || kid === '') return { ok: false, reason: 'bad-signature' };
    const binding = await this.keys.keyOf(kid);
    if (binding.state === 'unknown') return { ok: false, reason: 'unknown-key', kid };
    if (binding.state === 'revoked') return { ok: false, reason: 'revoked', kid };
    const payload = base64url.encode(canonicalJson(envelope));
    try {
      await compactVerify(`${parts[1]}.${payload}.${parts[2]}`, await this.keyOf(binding.key), { algorithms: ['EdDSA'] });
    } catch {
      return { ok: false, reason: 'bad-signature', kid };
    }
    // The team's tenant owns the agent; a public agent's tasks are other tenants' too, and which
    // task an event may change (its tenant, agent and turn) the projection checks against the task.
    const owner = this.keys.ownerOf(envelope.identity.agentId);
    if (owner?.name !== binding.team.name) return { ok: false, reason: 'not-team-agent', kid };
    return { ok: true, team: owner.name, kid };
  }

  private keyOf(jwk: TeamEventKey): Promise<CryptoKey | Uint8Array> {
    let key = this.imported.get(jwk);
    if (!key) {
      key = importJWK(jwk, 'EdDSA');
      this.imported.set(jwk, key);
    }
    return key;
  }
}
