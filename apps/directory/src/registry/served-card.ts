import { AgentCard } from '@a2a-js/sdk';
import { withPlatformExtensions } from '@mesh/contract';
import type { CardSigner } from '../signatures/card-signer.js';

/** The bindings and protocol versions the dispatcher serves for every agent (0.3 for callers still on it). */
const INTERFACES = (['1.0', '0.3'] as const).flatMap((protocolVersion) =>
  (['JSONRPC', 'HTTP+JSON'] as const).map((protocolBinding) => ({ protocolBinding, protocolVersion })),
);

/**
 * Builds the card callers must use: `supportedInterfaces` point at the dispatcher
 * (`<dispatcher>/a2a/{id}`, A2A 1.0 and 0.3, as the dispatcher serves them), the agent's own signatures are dropped (they covered the
 * original interfaces) and the platform signs it when a key is configured. Cached per version.
 */
export class ServedCards {
  private readonly cache = new Map<string, Promise<Record<string, unknown>>>();

  constructor(
    private readonly dispatcherUrl: string,
    private readonly signer: CardSigner | undefined,
    private readonly maxEntries = 10_000,
  ) {}

  get(id: string, version: number, stored: Record<string, unknown>): Promise<Record<string, unknown>> {
    const key = `${id}@${version}`;
    let hit = this.cache.get(key);
    if (!hit) {
      hit = this.build(id, stored);
      hit.catch(() => this.cache.delete(key));
      if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, hit);
    }
    return hit;
  }

  private async build(id: string, stored: Record<string, unknown>): Promise<Record<string, unknown>> {
    const url = `${this.dispatcherUrl}/a2a/${encodeURIComponent(id)}`;
    const registered = AgentCard.fromJSON(stored);
    const card: AgentCard = {
      ...registered,
      supportedInterfaces: INTERFACES.map((i) => ({ url, ...i, tenant: '' })),
      // What the dispatcher serves on every stream, declared here as on the dispatcher's own card.
      capabilities: {
        ...(registered.capabilities ?? { extensions: [] }),
        extensions: withPlatformExtensions(registered.capabilities?.extensions ?? []),
      },
      signatures: [],
    };
    const out = this.signer ? await this.signer.sign(card) : card;
    return AgentCard.toJSON(out) as Record<string, unknown>;
  }
}
