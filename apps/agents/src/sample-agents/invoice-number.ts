import { textOf, type AgentMessage } from '@mesh/agent-sdk';
import { isJsonObject } from '@mesh/contract';

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
