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
