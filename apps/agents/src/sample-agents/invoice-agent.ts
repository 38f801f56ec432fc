import { data, defineAgent, toolName } from '@mesh/agent-sdk';
import { BillingTools, type BillingInvoice } from '@mesh/contract';
import { BILLING, billingServer, invoiceIn } from './billing.js';

/** Answers questions about an invoice from billing-tools' read-only lookup (no side effects). */
export const invoiceAgent = defineAgent({
  id: 'invoice-agent',
  card: {
    name: 'Invoice Agent',
    description: 'Answers questions about an invoice: amount, currency, charges and refunds.',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [
      {
        id: 'invoice-lookup',
        name: 'Look up an invoice',
        description: 'Reads an invoice by its number and reports amount, charges and refunds',
        tags: ['billing', 'invoice'],
      },
    ],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json'],
  },
  channel: { visibility: 'public', maxInFlight: 64 },
  mcpServers: { [BILLING]: billingServer() },
  handler: async (task, ctx) => {
    const invoiceId = invoiceIn(task.message);
    if (!invoiceId) return ctx.askForInput('Which invoice? Please send its number, e.g. INV-2292.');
    const found = await ctx.callTool({ tool: toolName(BILLING, BillingTools.tools.getInvoice), args: { invoice_id: invoiceId } });
    if (found.status === 'error') return ctx.reject(`I cannot look up ${invoiceId}: ${found.text}`);
    if (found.status !== 'ok' || !found.data) return ctx.fail(`Could not read invoice ${invoiceId}.`);
    const inv = found.data as unknown as BillingInvoice;
    const charged = inv.amount_cents * inv.charges - inv.refunded_cents;
    await ctx.artifact({
      name: 'invoice',
      parts: [
        data({
          invoice_id: invoiceId,
          amount_cents: inv.amount_cents,
          currency: inv.currency,
          charges: inv.charges,
          refunded_cents: inv.refunded_cents,
          net_charged_cents: charged,
        }),
      ],
    });
    return ctx.complete(
      `${invoiceId}: ${(inv.amount_cents / 100).toFixed(2)} ${inv.currency}, charged ${inv.charges}×, ` +
        `${(inv.refunded_cents / 100).toFixed(2)} refunded; net ${(charged / 100).toFixed(2)} ${inv.currency}.`,
    );
  },
});
