import { after } from 'node:test';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ToolGrants } from '@mesh/contract';

/** POST {tokenUrl} exchanging `subjectToken` (RFC 8693) with `params` (e.g. `resource`): status, headers and JSON answer. */
export async function exchangeGrant(tokenUrl: string, subjectToken: string, params: Record<string, string>) {
  const res = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: ToolGrants.grantType,
      subject_token: subjectToken,
      subject_token_type: ToolGrants.jwtTokenType,
      ...params,
    }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** An MCP initialize at a tool server with `token` as bearer: its HTTP status (401: refused before anything else). */
export async function initializeWith(mcpUrl: string, token: string): Promise<number> {
  const res = await fetch(mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '0' } },
    }),
  });
  await res.body?.cancel();
  return res.status;
}

/** What a recording proxy saw: each request's headers and body. */
export interface SeenRequest {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A proxy on 127.0.0.1 in front of the MCP server at `mcpUrl` that records every request (the
 * tokens a worker sent), closed when the spec file ends. `url` is the MCP URL through it.
 */
export async function recordingProxy(mcpUrl: string): Promise<{ url: string; seen: SeenRequest[] }> {
  const target = new URL(mcpUrl);
  const seen: SeenRequest[] = [];
  const proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ headers: req.headers, body: body.toString() });
      const up = http.request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  after(() => {
    proxy.closeAllConnections();
    proxy.close();
  });
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${target.pathname}`, seen };
}
