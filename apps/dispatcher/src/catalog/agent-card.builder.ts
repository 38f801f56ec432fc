import { AgentCard, type AgentExtension } from '@a2a-js/sdk';
import type { AgentRecord } from '@mesh/contract';

/** Base URL of one agent under the dispatcher: `{publicUrl}/a2a/{agentId}`. */
export function agentBaseUrl(publicUrl: string, agentId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/a2a/${agentId}`;
}

/** Push notifications are delivered from the event stream (see push/push.service.ts). */
export const PUSH_SUPPORTED = true;

/** The project's resumable-streams extension (docs/streams.md). */
export const RESUMABLE_STREAMS_URI = 'https://agent-mesh.dev/extensions/resumable-streams/v1';

/**
 * Every stream event carries its per-task number as the SSE id; a SubscribeToTask (or a retried
 * SendStreamingMessage) with Last-Event-ID resumes after it on any replica. Optional for clients:
 * one that ignores it sees plain A2A streams.
 */
export const RESUMABLE_STREAMS: AgentExtension = {
  uri: RESUMABLE_STREAMS_URI,
  description:
    'Stream events carry per-task sequence numbers as SSE ids, the same on every replica; reconnect to SubscribeToTask ' +
    'with Last-Event-ID (header, or the lastEventId query parameter) for every event after it, then the live ones.',
  required: false,
  params: { resumeHeader: 'Last-Event-ID', resumeQueryParameter: 'lastEventId', pushEventIdHeader: 'X-A2A-Stream-Event-Id' },
};

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
      extensions: [...(registered.capabilities?.extensions ?? []).filter((e) => e.uri !== RESUMABLE_STREAMS_URI), RESUMABLE_STREAMS],
      streaming: true,
      pushNotifications: PUSH_SUPPORTED,
      extendedAgentCard: false,
    },
    // Signatures covered the card as registered; the rewritten interfaces would not verify.
    signatures: [],
  };
}
