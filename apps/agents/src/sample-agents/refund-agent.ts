import { data, defineAgent, toolName } from '@mesh/agent-sdk';
import { BillingTools, type BillingAlreadyRefunded, type BillingInvoice, type BillingRefund } from '@mesh/contract';
import { BILLING, billingServer, invoiceIn } from './billing.js';

/**
 * Refunds a duplicate charge: asks for the invoice number when it has none, checks the invoice, and
 * issues at most one refund (the effect ledger and the tool's idempotency key make repeats harmless).
 */
export const refundAgent = defineAgent({
  id: 'refund-agent',
  card: {
    name: 'Refund Agent',
    description: 'Refunds a customer who was charged twice for an invoice.',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [
      {
        id: 'refund-duplicate-charge',
        name: 'Refund duplicate charge',
        description: 'Checks an invoice and refunds a duplicate charge once',
        tags: ['billing', 'refund'],
      },
    ],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json'],
  },
  channel: { visibility: 'public', maxInFlight: 64 },
  mcpServers: { [BILLING]: billingServer({ reconcileTool: BillingTools.tools.refundStatus }) },
  handler: async (task, ctx) => {
    const invoiceId =
      invoiceIn(task.message) ??
      [...task.history]
        .reverse()
        .filter((m) => m.role === 'user')
        .map(invoiceIn)
        .find(Boolean);
    if (!invoiceId) return ctx.askForInput('Which invoice was charged twice? Please send its number, e.g. INV-2291.');

    await ctx.progress(`Checking invoice ${invoiceId}.`);
    const found = await ctx.callTool({ tool: toolName(BILLING, BillingTools.tools.getInvoice), args: { invoice_id: invoiceId } });
    if (found.status === 'error') return ctx.reject(`I cannot refund ${invoiceId}: ${found.text}`);
    if (found.status !== 'ok' || !found.data) return ctx.fail(`Could not read invoice ${invoiceId}.`);
    const invoice = found.data as unknown as BillingInvoice;

    const refundable = invoice.amount_cents * (invoice.charges - 1) - invoice.refunded_cents;
    if (!invoice.duplicate_charge || refundable <= 0) {
      await ctx.artifact({
        name: 'refund',
        parts: [
          data(
            invoice.duplicate_charge
              ? // The caller learns which refund already settled it, whoever asked for it first.
                { invoice_id: invoiceId, refund_id: invoice.refund_ids?.at(-1) ?? null, state: 'already_refunded' }
              : { invoice_id: invoiceId, refund_id: null, state: 'not_eligible' },
          ),
        ],
      });
      return ctx.complete(
        invoice.duplicate_charge
          ? `The duplicate charge on ${invoiceId} was already refunded.`
          : `${invoiceId} was charged once; nothing to refund.`,
      );
    }

    const refund = await ctx.callTool({
      tool: toolName(BILLING, BillingTools.tools.issueRefund),
      args: { invoice_id: invoiceId, amount_cents: refundable, reason: 'duplicate charge' },
    });
    if (refund.status === 'unknown') {
      await ctx.artifact({
        name: 'refund',
        parts: [data({ invoice_id: invoiceId, refund_id: null, state: 'unknown', idempotency_key: refund.idempotencyKey })],
      });
      return ctx.fail(
        `The refund for ${invoiceId} was sent but its outcome is not known yet; it is being reconciled. Do not refund again.`,
      );
    }
    if (refund.status === 'error' && refund.data?.state === 'already_refunded') {
      // Another task refunded this invoice between our read and our refund: its refund settled it.
      const settled = refund.data as unknown as BillingAlreadyRefunded;
      await ctx.artifact({
        name: 'refund',
        parts: [data({ invoice_id: invoiceId, refund_id: settled.refund_id, state: 'already_refunded' })],
      });
      return ctx.complete(`The duplicate charge on ${invoiceId} was already refunded.`);
    }
    if (refund.status === 'error' || !refund.data)
      return ctx.fail(`The refund for ${invoiceId} failed: ${refund.status === 'error' ? refund.text : 'no result'}`);
    const r = refund.data as unknown as BillingRefund;
    await ctx.artifact({
      name: 'refund',
      parts: [
        data({ invoice_id: invoiceId, refund_id: r.refund_id, amount_cents: r.amount_cents, currency: r.currency, state: 'refunded' }),
      ],
    });
    return ctx.complete(
      `Refunded ${(r.amount_cents / 100).toFixed(2)} ${r.currency} for the duplicate charge on ${invoiceId} (refund ${r.refund_id}).`,
    );
  },
});
