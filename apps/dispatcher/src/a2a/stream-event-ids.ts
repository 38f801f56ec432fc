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
  private opener?: () => void;

  /** `resumeAfter`: the caller's Last-Event-ID (undefined: a new stream). */
  constructor(readonly resumeAfter?: number) {}

  /** The next event written carries this id. */
  next(seq: number): void {
    this.pending.push(String(seq));
  }

  /**
   * Sends the stream's headers now, before its first event. The SDK sends them only with the first
   * event (so that an error before it can still be a plain error response): a resumed stream of a
   * quiet task would leave its caller without even a status line until the task's next change.
   * Called once the request is known to be valid; a no-op when the headers are already out.
   */
  open(): void {
    this.opener?.();
  }

  /**
   * Prefixes each SSE data event the SDK writes to `res` with the `id:` line its event was
   * yielded with (error events, written without one, carry none), and prepares {@link open}.
   */
  attach(res: Response): void {
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk === 'string' && chunk.startsWith('data: ') && this.pending.length > 0) {
        return write(`id: ${this.pending.shift()}\n${chunk}`, ...rest);
      }
      return write(chunk, ...rest);
    };
    this.opener = () => {
      if (res.headersSent) return;
      res.status(200);
      for (const [name, value] of Object.entries(SSE_HEADERS)) res.setHeader(name, value);
      res.flushHeaders();
      // The SDK sets the same headers again with the first event: by then they are on the wire.
      const setHeader = res.setHeader.bind(res);
      res.setHeader = ((name: string, value: string | number | readonly string[]) =>
        res.headersSent ? res : setHeader(name, value)) as typeof res.setHeader;
      // An error before the first event, which the SDK answers as a JSON body with a status, goes
      // as an SSE error event instead (as the SDK writes an error in the middle of a stream).
      const status = res.status.bind(res);
      res.status = ((code: number) => (res.headersSent ? res : status(code))) as typeof res.status;
      const json = res.json.bind(res);
      res.json = ((body: unknown) => {
        if (!res.headersSent) return json(body);
        if (!res.writableEnded) res.end(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
        return res;
      }) as typeof res.json;
    };
  }
}

/** The headers of an SSE response, as the SDK's stream writer sets them. */
const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
};

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
