import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Request as ExpressRequest, Response as ExpressResponse } from 'express';

/**
 * The web-standard `Request` the MCP server SDK serves, built from an Express request whose body
 * was already parsed (and size-checked) by `express.json`. The client going away aborts its
 * signal: that is how a 2026-07-28 client cancels a call, and it aborts the tool's handler.
 */
export function toWebRequest(req: ExpressRequest, res: ExpressResponse): Request {
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
  }
  // The body is handed on parsed; its bytes are gone and their length no longer applies.
  headers.delete('content-length');
  headers.delete('content-encoding');
  const withBody = req.method === 'POST' && req.body !== undefined;
  return new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.originalUrl}`, {
    method: req.method,
    headers,
    signal: gone.signal,
    ...(withBody ? { body: JSON.stringify(req.body) } : {}),
  });
}

/** Writes a web-standard `Response` (a JSON body or an SSE stream) to the Express response. */
export async function sendWebResponse(res: ExpressResponse, response: Response): Promise<void> {
  res.status(response.status);
  response.headers.forEach((value, name) => res.setHeader(name, value));
  if (!response.body) return void res.end();
  // A client that goes away ends the stream on the server side too (pipeline destroys the source).
  await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res).catch(() => undefined);
}
