import { Agent, request, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { setMaxListeners } from 'node:events';
import { Readable } from 'node:stream';

/** The `fetch` shape the SDK's Streamable HTTP transport calls. */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface HttpFetchOptions {
  /** Idle keep-alive sockets kept open per origin (default 256: one per call in flight at the usual limits). */
  maxFreeSockets?: number;
}

/**
 * A `fetch` for the MCP transport on node:http with a keep-alive agent of its own. The global
 * fetch (undici) spends per request on Request/Headers objects, a fetch controller and a web
 * stream for the body; an MCP call is one small POST whose answer is either a small JSON body,
 * read here in one piece, or an SSE stream, handed over as a web stream as fetch would. Redirects
 * are never followed (`redirect: 'manual'` semantics); the transport reports them itself.
 */
export function httpFetch(opts: HttpFetchOptions = {}): FetchLike & { close(): void } {
  // No cap on open sockets (as fetch): a notification stream or an SSE answer the SDK stops reading
  // early holds its socket, and a cap would make calls queue behind them.
  const agentOpts = { keepAlive: true, maxFreeSockets: opts.maxFreeSockets ?? 256, scheduling: 'lifo' as const };
  const http = new Agent(agentOpts);
  const https = new HttpsAgent(agentOpts);
  const fetchLike = (url: string | URL, init: RequestInit = {}): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      const target = typeof url === 'string' ? new URL(url) : url;
      const secure = target.protocol === 'https:';
      const signal = init.signal ?? undefined;
      if (signal?.aborted) return reject(signal.reason);
      // The transport's own signal is shared by every request in flight, each adding a listener
      // until it ends: lift the limit (fetch raises it too), or hundreds of calls in flight print warnings.
      if (signal) setMaxListeners(0, signal);
      const req = (secure ? httpsRequest : request)(
        target,
        { method: init.method ?? 'GET', headers: headersOf(init.headers), agent: secure ? https : http, ...(signal ? { signal } : {}) },
        (res) => {
          const status = res.statusCode ?? 0;
          const headers = responseHeaders(res);
          const type = res.headers['content-type'] ?? '';
          // A stream stays a stream; anything else (an error status included) is small and read whole.
          if (type.includes('text/event-stream') && status >= 200 && status < 300 && status !== 204 && status !== 205) {
            const body = Readable.toWeb(res) as ReadableStream<Uint8Array>;
            return resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers }));
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('error', reject);
          res.once('end', () => resolve(bodyResponse(Buffer.concat(chunks), status, res.statusMessage ?? '', headers)));
        },
      );
      req.once('error', (err) => reject(signal?.aborted ? signal.reason : fetchError(err)));
      req.end(typeof init.body === 'string' ? init.body : init.body == null ? undefined : String(init.body));
    });
  return Object.assign(fetchLike, {
    close: () => {
      http.destroy();
      https.destroy();
    },
  });
}

function headersOf(h: RequestInit['headers']): Record<string, string> {
  if (!h) return {};
  if (h instanceof Headers) return Object.fromEntries(h.entries());
  if (Array.isArray(h)) return Object.fromEntries(h);
  return h as Record<string, string>;
}

function responseHeaders(res: IncomingMessage): Headers {
  const out = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) out.append(raw[i]!, raw[i + 1]!);
  return out;
}

/**
 * A Response over a whole body, without a web stream unless something asks for `body`: the
 * transport reads a JSON answer with `json()` and an error with `text()`.
 */
function bodyResponse(buf: Buffer, status: number, statusText: string, headers: Headers): Response {
  const text = () => buf.toString('utf8');
  const res = {
    ok: status >= 200 && status < 300,
    status,
    statusText,
    headers,
    type: 'basic',
    url: '',
    redirected: false,
    bodyUsed: false,
    get body() {
      return new Response(buf).body;
    },
    text: async () => text(),
    json: async () => JSON.parse(text()) as unknown,
    arrayBuffer: async () => buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength),
    clone: () => bodyResponse(buf, status, statusText, headers),
  };
  return res as unknown as Response;
}

/** Connection-level failures surface as fetch's TypeError, which callers already treat as "fetch failed". */
function fetchError(err: Error): TypeError {
  return new TypeError('fetch failed', { cause: err });
}
