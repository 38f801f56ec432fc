import type { Client } from '@a2a-js/sdk/client';
import { taskStateToJSON, type StreamResponse, type TaskState } from '@a2a-js/sdk';
import { a2aClientWith, type Binding } from './dispatcher-harness.js';

/** A fetch adding the bearer token that hands the body through as it arrives (SSE). */
export function streamingFetch(token: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** The official client for streaming (no buffering fetch). */
export async function streamingClient(url: string, agentId: string, binding: Binding, token = 'demo-acme'): Promise<Client> {
  return a2aClientWith(streamingFetch(token), url, agentId, binding);
}

export interface Collected {
  events: StreamResponse[];
  done: Promise<void>;
  stream: AsyncGenerator<StreamResponse, void, undefined>;
}

/** Drains a stream in the background: `events` fills as they arrive, `done` settles at its end. */
export function collect(stream: AsyncGenerator<StreamResponse, void, undefined>): Collected {
  const events: StreamResponse[] = [];
  const done = (async () => {
    for await (const e of stream) events.push(e);
  })();
  done.catch(() => undefined);
  return { events, done, stream };
}

/** A compact view of a stream: `task:SUBMITTED`, `status:WORKING`, `artifact:<text>`. */
export function describe(events: StreamResponse[]): string[] {
  return events.map((e) => {
    const p = e.payload;
    if (p?.$case === 'task') return `task:${short(p.value.status?.state)}`;
    if (p?.$case === 'statusUpdate') return `status:${short(p.value.status?.state)}`;
    if (p?.$case === 'artifactUpdate')
      return `artifact:${p.value.artifact?.parts.map((x) => (x.content?.$case === 'text' ? x.content.value : '')).join('')}`;
    return String(p?.$case);
  });
}

const short = (s: TaskState | undefined) => (s === undefined ? 'none' : taskStateToJSON(s).replace('TASK_STATE_', ''));
