import type { Response } from 'express';
import { RequestMalformedError } from '@a2a-js/sdk/errors';

/** The standard SSE header a reconnecting client sends with the last id it received. */
export const LAST_EVENT_ID_HEADER = 'last-event-id';
/** The same as a query parameter, for clients that cannot set headers (e.g. a browser's EventSource URL). */
export const LAST_EVENT_ID_PARAM = 'lastEventId';

/**
 * The SSE `id:` of each event a stream yields, handed from the request handler (which knows each
 * event's number in the task's stream) to the response (written by the SDK's SSE writer, which
 * knows none): the handler calls `next` just before it yields an event, and the SDK writes that
 * event before it asks for the next one, so ids and events pair up in order.
 */
export class StreamEventIds {
  private readonly pending: string[] = [];

  /** `resumeAfter`: the caller's Last-Event-ID (undefined: a new stream). */
  constructor(readonly resumeAfter?: number) {}

  /** The next event written carries this id. */
  next(seq: number): void {
    this.pending.push(String(seq));
  }

  /**
   * Prefixes each SSE data event the SDK writes to `res` with the `id:` line its event was
   * yielded with (error events, written without one, carry none).
   */
  attach(res: Response): void {
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk === 'string' && chunk.startsWith('data: ') && this.pending.length > 0) {
        return write(`id: ${this.pending.shift()}\n${chunk}`, ...rest);
      }
      return write(chunk, ...rest);
    };
  }
}

/**
 * The resume point a request names: the Last-Event-ID header, else the `lastEventId` query
 * parameter; undefined when neither is given. An id is a task's event number (a non-negative
 * integer); anything else is refused with an error saying so.
 */
export function resumePointOf(header: string | undefined, query: unknown): number | RequestMalformedError | undefined {
  const raw = header ?? (typeof query === 'string' ? query : Array.isArray(query) ? query.join(',') : undefined);
  if (raw === undefined || raw.trim() === '') return undefined;
  if (!/^\s*\d{1,15}\s*$/.test(raw)) {
    return new RequestMalformedError(
      `Last-Event-ID must be an event id of this task's stream (a non-negative integer), got ${JSON.stringify(raw.slice(0, 40))}`,
    );
  }
  return Number(raw);
}
