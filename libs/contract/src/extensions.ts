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
