import { DELEGATION_EXTENSION } from './delegation.js';

/** The project's resumable-streams A2A extension (docs/streams.md). */
export const RESUMABLE_STREAMS_URI = 'https://agent-mesh.dev/extensions/resumable-streams/v1';

/**
 * How served Agent Cards declare it (`capabilities.extensions`): every stream event carries its
 * per-task number as the SSE id; SubscribeToTask with Last-Event-ID resumes after it on any
 * replica. Optional for clients: one that ignores it sees plain A2A streams.
 */
export const RESUMABLE_STREAMS = {
  uri: RESUMABLE_STREAMS_URI,
  description:
    'Stream events carry per-task sequence numbers as SSE ids, the same on every replica; reconnect to SubscribeToTask ' +
    'with Last-Event-ID (header, or the lastEventId query parameter) for every event after it, then the live ones.',
  required: false,
  params: { resumeHeader: 'Last-Event-ID', resumeQueryParameter: 'lastEventId', pushEventIdHeader: 'X-A2A-Stream-Event-Id' },
} as const;

/** An extension the platform declares on every served card, whatever was registered. */
export interface PlatformExtension {
  uri: string;
  description: string;
  required: boolean;
  params: Record<string, unknown>;
}

/**
 * The card's registered extensions with the platform's own (resumable streams, delegation) in
 * place of any registered under their URIs: the dispatcher serves both for every agent.
 */
export function withPlatformExtensions<T extends { uri: string }>(registered: readonly T[]): Array<T | PlatformExtension> {
  const own: PlatformExtension[] = [RESUMABLE_STREAMS, DELEGATION_EXTENSION].map((e) => ({ ...e, params: { ...e.params } }));
  const uris = new Set(own.map((e) => e.uri));
  return [...registered.filter((e) => !uris.has(e.uri)), ...own];
}
