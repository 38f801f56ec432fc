import { AgentCard } from '@a2a-js/sdk';
import { withPlatformExtensions, type AgentRecord } from '@mesh/contract';

/** Base URL of one agent under the dispatcher: `{publicUrl}/a2a/{agentId}`. */
export function agentBaseUrl(publicUrl: string, agentId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/a2a/${agentId}`;
}

/** Push notifications are delivered from the event stream (see push/push.service.ts). */
export const PUSH_SUPPORTED = true;

/**
 * The card callers see: the registered card with `supportedInterfaces` replaced by the
 * dispatcher's two bindings in A2A 1.0 and, for callers still on it, A2A 0.3 (the SDK's
 * compatibility layer; a 1.0 client picks its version's entries, the 0.3 card lists the others),
 * and capabilities limited to what the dispatcher serves (streaming on every replica, resumable
 * from any of them; push notifications).
 */
export function buildServedCard(record: AgentRecord, publicUrl: string): AgentCard {
  const url = agentBaseUrl(publicUrl, record.id);
  const registered = AgentCard.fromJSON(record.card);
  return {
    ...registered,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
      { url, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3', tenant: '' },
    ],
    capabilities: {
      ...(registered.capabilities ?? { extensions: [] }),
      // The dispatcher serves the streams, so it declares their extension whatever was registered.
      extensions: withPlatformExtensions(registered.capabilities?.extensions ?? []),
      streaming: true,
      pushNotifications: PUSH_SUPPORTED,
      extendedAgentCard: false,
    },
    // Signatures covered the card as registered; the rewritten interfaces would not verify.
    signatures: [],
  };
}
