import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';

/**
 * A plain HTTP request (node:http): unlike fetch it adds no Cache-Control to conditional
 * requests, and repeated headers, odd content types and raw bytes reach the server unchanged.
 * With `timeoutMs`, no answer in time is an error (a hang is a finding).
 */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: OutgoingHttpHeaders; body?: string | Buffer; timeoutMs?: number } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const method = opts.method ?? 'GET';
    const req = httpRequest(url, { method, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    if (opts.timeoutMs !== undefined) {
      const ms = opts.timeoutMs;
      req.setTimeout(ms, () => req.destroy(new Error(`no answer within ${ms / 1000} s: ${method} ${url}`)));
    }
    req.on('error', reject);
    req.end(opts.body);
  });
}
