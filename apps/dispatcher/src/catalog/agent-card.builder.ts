import { AgentCard } from '@a2a-js/sdk';
import type { AgentRecord } from '@mesh/contract';

/** Base URL of one agent under the dispatcher: `{publicUrl}/a2a/{agentId}`. */
export function agentBaseUrl(publicUrl: string, agentId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/a2a/${agentId}`;
}

/**
 * The card callers see: the registered card with `supportedInterfaces` replaced by the
 * dispatcher's two A2A 1.0 bindings, and capabilities limited to what the dispatcher serves
 * (streaming on every replica; push notifications).
 */
/** Push notifications are delivered from the event stream (see push/push.service.ts). */
export const PUSH_SUPPORTED = true;

export function buildServedCard(record: AgentRecord, publicUrl: string): AgentCard {
  const url = agentBaseUrl(publicUrl, record.id);
  const registered = AgentCard.fromJSON(record.card);
  return {
    ...registered,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    ],
    capabilities: {
      ...(registered.capabilities ?? { extensions: [] }),
      streaming: true,
      pushNotifications: PUSH_SUPPORTED,
      extendedAgentCard: false,
    },
    // Signatures covered the card as registered; the rewritten interfaces would not verify.
    signatures: [],
  };
}
