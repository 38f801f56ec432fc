import { textOf, type AgentMessage, type HttpMcpServer } from '@mesh/agent-sdk';
import { BillingTools, isJsonObject } from '@mesh/contract';

/** The sample agents' name for billing-tools among their MCP servers (tools are `mcp__billing__…`). */
export const BILLING = 'billing';

/**
 * billing-tools as the sample agents reach it (AGENTS_MCP_SERVERS overrides the URL): it refuses
 * calls without a token for its audience (AGENTS_TOOL_TOKEN_SECRET).
 */
export function billingServer(extra: Pick<HttpMcpServer, 'reconcileTool'> = {}): HttpMcpServer {
  return {
    transport: 'http',
    url: `http://127.0.0.1:${BillingTools.port}/mcp`,
    requestTimeoutMs: 10000,
    tokenAudience: BillingTools.audience,
    ...extra,
  };
}

/** An invoice number as the demo's billing-tools writes it. */
export const INVOICE_RE = /\bINV-\d{1,10}\b/i;

/** The invoice number named in a message: a data part's `invoice_id`, or `INV-…` in its text. */
export function invoiceIn(m: AgentMessage): string | undefined {
  for (const p of m.parts) {
    const invoiceId = p.type === 'data' && isJsonObject(p.data) ? p.data.invoice_id : undefined;
    if (typeof invoiceId === 'string') return invoiceId.toUpperCase();
  }
  return INVOICE_RE.exec(textOf(m.parts))?.[0].toUpperCase();
}
