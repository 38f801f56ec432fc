import { request as httpRequest, type ClientRequest, type OutgoingHttpHeaders } from 'node:http';

/** An SSE response read with node:http, so the test decides when the connection closes. */
export interface RawSse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The `data:` payloads received so far (parsed JSON), in order. */
  events: unknown[];
  /** The `id:` of each of `events` (undefined: the event had none). */
  ids: Array<string | undefined>;
  /** The whole body so far (an error answer is plain JSON). */
  body(): string;
  /** Settles when the server ends the response or the connection closes. */
  ended: Promise<void>;
  /** Closes the connection from the client side (as a caller going away does). */
  close(): void;
}

/** Opens a request and resolves once the response head arrived. */
export function openRawSse(url: string, opts: { method?: string; headers?: OutgoingHttpHeaders; body?: string } = {}): Promise<RawSse> {
  return new Promise((resolve, reject) => {
    let req: ClientRequest | undefined = undefined;
    req = httpRequest(url, { method: opts.method ?? 'GET', headers: { accept: 'text/event-stream', ...opts.headers } }, (res) => {
      let raw = '';
      let pending = '';
      const events: unknown[] = [];
      const ids: Array<string | undefined> = [];
      res.setEncoding('utf8');
      const ended = new Promise<void>((done) => {
        res.on('end', done);
        res.on('close', done);
        res.on('error', () => done());
      });
      res.on('data', (chunk: string) => {
        raw += chunk;
        pending += chunk;
        let at: number;
        while ((at = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, at);
          pending = pending.slice(at + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trim())
            .join('\n');
          if (!data) continue;
          ids.push(
            block
              .split('\n')
              .find((l) => l.startsWith('id:'))
              ?.slice(3)
              .trim(),
          );
          events.push(JSON.parse(data));
        }
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        ids,
        body: () => raw,
        ended,
        close: () => req!.destroy(),
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
