import { CompactSign, importJWK, type CryptoKey } from 'jose';
import { canonicalJson, decodeEnvelope, encodeEnvelope, Headers, type Envelope } from '@mesh/contract';
import type { BusProducer } from '@mesh/bus';
import type { EventSigningKey } from '../config/agents.config.js';
import type { EventSink } from './turn-runner.js';

/**
 * Signs a team worker's events: a detached compact JWS (EdDSA, header `kid`) over the RFC 8785
 * canonical JSON of the envelope as a consumer decodes it. Signing the decoded form (not the object
 * in hand) keeps the signature valid whatever the wire drops or normalises, since the dispatcher
 * verifies what it decoded.
 */
export class EventSigner {
  private key?: Promise<CryptoKey | Uint8Array>;

  constructor(private readonly jwk: EventSigningKey) {}

  /** The `signature` header's value for this envelope. */
  async sign(envelope: Envelope): Promise<string> {
    const wire = encodeEnvelope(envelope);
    const payload = new TextEncoder().encode(canonicalJson(decodeEnvelope(wire)));
    // Imported once; a failed import is retried by the next event.
    this.key ??= importJWK(this.jwk, 'EdDSA').catch((err: unknown) => {
      this.key = undefined;
      throw err;
    });
    const jws = await new CompactSign(payload).setProtectedHeader({ alg: 'EdDSA', kid: this.jwk.kid }).sign(await this.key);
    const [header, , signature] = jws.split('.');
    return `${header}..${signature}`;
  }
}

/**
 * The event sink of a team worker: every event goes to the team events topic (whatever topic the
 * runner names), with its contract headers and the signature.
 */
export class SignedEventSink implements EventSink {
  constructor(
    private readonly producer: Pick<BusProducer, 'sendRecord'>,
    private readonly signer: EventSigner,
    private readonly teamEventsTopic: string,
  ) {}

  async send(_topic: string, key: string, envelope: Envelope): Promise<void> {
    const wire = encodeEnvelope(envelope);
    const signature = await this.signer.sign(envelope);
    await this.producer.sendRecord(this.teamEventsTopic, key, wire.value, { ...wire.headers, [Headers.signature]: signature });
  }
}
