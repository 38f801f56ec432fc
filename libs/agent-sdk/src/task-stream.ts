import type { StreamResponse } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';

/** The resumable-streams extension the dispatcher declares in its cards (docs/streams.md). */
export { RESUMABLE_STREAMS_URI } from '@mesh/contract';

/**
 * A fetch for the official A2A client that remembers the SSE `id:` of each event its stream
 * responses carry (the client itself drops them) and, while `resumeAfter` is set, sends it as
 * `Last-Event-ID`. Build the client over {@link fetch}; {@link followTaskStream} does the rest.
 */
export class StreamResumption {
  /** Sent as Last-Event-ID on the next requests (undefined: none). */
  resumeAfter?: string;
  /** The id of each event received on the current connection and not taken yet, in order. */
  private ids: Array<string | undefined> = [];

  constructor(private readonly inner: typeof fetch = globalThis.fetch) {}

  /** The fetch to build the client with. */
  readonly fetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (this.resumeAfter !== undefined) headers.set('last-event-id', this.resumeAfter);
    const res = await this.inner(input, { ...init, headers });
    if (!res.body || !res.headers.get('content-type')?.includes('text/event-stream')) return res;
    const ids = this.ids;
    let pending = '';
    const decoder = new TextDecoder();
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        pending += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
        let at: number;
        while ((at = pending.indexOf('\n\n')) >= 0) {
          const lines = pending.slice(0, at).split('\n');
          pending = pending.slice(at + 2);
          // One id per data event, as the client yields one event per data event (an error event throws).
          if (!lines.some((l) => l.startsWith('data:')) || lines.some((l) => l.startsWith('event:') && l.slice(6).trim() !== 'message'))
            continue;
          ids.push(
            lines
              .find((l) => l.startsWith('id:'))
              ?.slice(3)
              .trim(),
          );
        }
        out.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(tap), { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  /** A new connection: ids of the one before are dropped. */
  reset(): void {
    this.ids = [];
  }

  /** The id of the next event the client yielded (call once per event, in order). */
  takeId(): string | undefined {
    return this.ids.shift();
  }
}

export interface FollowStreamOptions {
  /** First pause before reconnecting (doubled after each failed attempt). Default 500 ms. */
  firstDelayMs?: number;
  /** Longest pause between attempts. Default 10 s. */
  maxDelayMs?: number;
  /** Attempts in a row without an event before giving up (the last error is thrown). Default 10. */
  maxAttempts?: number;
  /** Stops following (the generator ends by throwing the abort reason from the client). */
  signal?: AbortSignal;
  /** Called before each pause: which attempt, how long, from which id, and why. */
  onRetry?(info: { attempt: number; delayMs: number; lastEventId?: string; error: unknown }): void;
}

/**
 * A2A errors that say the request itself is wrong (unknown task, expired id, unsupported): a
 * reconnect would get the same answer. Anything else (a dropped connection, a replica gone, 429,
 * 5xx) is retried.
 */
const FINAL_ERRORS = new Set([
  'TaskNotFoundError',
  'RequestMalformedError',
  'UnsupportedOperationError',
  'VersionNotSupportedError',
  'ContentTypeNotSupportedError',
  'ExtensionSupportRequiredError',
  'InvalidAgentResponseError',
]);

/** Whether a failed stream is worth reconnecting. */
export function isRetryableStreamError(err: unknown): boolean {
  return !(err instanceof Error && FINAL_ERRORS.has(err.name));
}

/**
 * Follows a task's stream (SubscribeToTask through the official client, built over
 * `resumption.fetch`) until it settles: after a dropped connection it reconnects with exponential
 * backoff and resumes with Last-Event-ID after the last event it yielded, so each event is yielded
 * once, in order, whichever replica answers. Pass `resumeAfter` to start after an id received
 * before (then no Task snapshot comes first). Errors that a retry cannot fix are thrown at once.
 */
export async function* followTaskStream(
  client: Client,
  taskId: string,
  resumption: StreamResumption,
  opts: FollowStreamOptions & { resumeAfter?: string } = {},
): AsyncGenerator<StreamResponse, void, undefined> {
  const first = opts.firstDelayMs ?? 500;
  const max = opts.maxDelayMs ?? 10_000;
  const attempts = opts.maxAttempts ?? 10;
  let lastEventId = opts.resumeAfter;
  let failures = 0;
  for (;;) {
    resumption.reset();
    resumption.resumeAfter = lastEventId;
    try {
      for await (const event of client.resubscribeTask({ tenant: '', id: taskId }, opts.signal ? { signal: opts.signal } : undefined)) {
        lastEventId = resumption.takeId() ?? lastEventId;
        failures = 0;
        yield event;
      }
      return; // the server ended the stream: the task settled
    } catch (err) {
      if (opts.signal?.aborted || !isRetryableStreamError(err)) throw err;
      failures += 1;
      if (failures >= attempts) throw err;
      const delayMs = Math.min(max, first * 2 ** (failures - 1));
      opts.onRetry?.({ attempt: failures, delayMs, ...(lastEventId !== undefined ? { lastEventId } : {}), error: err });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    } finally {
      resumption.resumeAfter = undefined;
    }
  }
}
