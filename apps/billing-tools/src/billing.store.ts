import type { DataSource } from 'typeorm';
import type { BillingInvoice as Invoice, BillingRefund as Refund } from '@mesh/contract';

/**
 * Nothing is left to refund because earlier refunds settled the duplicate charge: `refundId` is the
 * latest of them (a caller racing another one learns which refund won).
 */
export class AlreadyRefundedError extends Error {
  constructor(
    readonly invoiceId: string,
    readonly refundId: string,
  ) {
    super(`the duplicate charge on ${invoiceId} was already refunded (refund ${refundId})`);
  }
}

/** Billing data access: plain SQL so the idempotency-key constraint does the deduplication. */
export class BillingStore {
  constructor(private readonly ds: DataSource) {}

  async invoice(tenant: string, invoiceId: string): Promise<Invoice | undefined> {
    const rows: Array<Omit<Invoice, 'duplicate_charge'>> = await this.ds.query(
      `SELECT i.invoice_id, i.customer, i.amount_cents, i.currency, i.charges,
              COALESCE((SELECT sum(r.amount_cents) FROM billing.refunds r WHERE r.tenant = i.tenant AND r.invoice_id = i.invoice_id), 0)::int AS refunded_cents,
              ARRAY(SELECT r.refund_id::text FROM billing.refunds r WHERE r.tenant = i.tenant AND r.invoice_id = i.invoice_id ORDER BY r.created_at, r.refund_id) AS refund_ids
       FROM billing.invoices i WHERE i.tenant = $1 AND i.invoice_id = $2`,
      [tenant, invoiceId],
    );
    const r = rows[0];
    return r ? { ...r, duplicate_charge: r.charges > 1 } : undefined;
  }

  /**
   * Issues a refund once per idempotency key of the tenant: a second call with the same key returns
   * the first refund. Only duplicate charges are refundable (the charges beyond the first, less what
   * was refunded). Returns undefined when the invoice does not exist; throws AlreadyRefundedError when
   * earlier refunds left nothing refundable, and an Error when the amount is otherwise not refundable.
   */
  async issueRefund(input: {
    tenant: string;
    subject: string;
    invoiceId: string;
    amountCents: number;
    reason: string;
    key: string;
  }): Promise<Refund | undefined> {
    return this.ds.transaction(async (m) => {
      const existing = await this.refundByKey(input.tenant, input.key, m.query.bind(m));
      if (existing) return existing;
      const inv: Array<{ amount_cents: number; charges: number; currency: string }> = await m.query(
        `SELECT amount_cents, charges, currency FROM billing.invoices WHERE tenant = $1 AND invoice_id = $2 FOR UPDATE`,
        [input.tenant, input.invoiceId],
      );
      if (!inv[0]) return undefined;
      // Read under the invoice's row lock: a racing refund of the same invoice has committed or waits.
      const refunded: Array<{ total: number; latest: string | null }> = await m.query(
        `SELECT COALESCE(sum(amount_cents), 0)::int AS total,
                (SELECT refund_id::text FROM billing.refunds WHERE tenant = $1 AND invoice_id = $2 ORDER BY created_at DESC, refund_id DESC LIMIT 1) AS latest
         FROM billing.refunds WHERE tenant = $1 AND invoice_id = $2`,
        [input.tenant, input.invoiceId],
      );
      const refundable = inv[0].amount_cents * Math.max(0, inv[0].charges - 1) - refunded[0].total;
      if (inv[0].charges <= 1) throw new Error(`${input.invoiceId} was charged once: there is no duplicate charge to refund`);
      if (refundable <= 0 && refunded[0].latest) throw new AlreadyRefundedError(input.invoiceId, refunded[0].latest);
      if (input.amountCents > refundable)
        throw new Error(
          `only ${Math.max(0, refundable)} cents of ${input.invoiceId} are refundable (duplicate charges less earlier refunds)`,
        );
      await m.query(
        `INSERT INTO billing.refunds (tenant, invoice_id, amount_cents, reason, idempotency_key, subject)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, idempotency_key) DO NOTHING`,
        [input.tenant, input.invoiceId, input.amountCents, input.reason, input.key, input.subject],
      );
      return this.refundByKey(input.tenant, input.key, m.query.bind(m));
    });
  }

  async refundByKey(
    tenant: string,
    key: string,
    query: (text: string, params: unknown[]) => Promise<unknown> = (t, p) => this.ds.query(t, p),
  ): Promise<Refund | undefined> {
    const rows = (await query(
      `SELECT r.refund_id, r.invoice_id, r.amount_cents, i.currency, 'issued' AS state, r.idempotency_key, r.created_at
       FROM billing.refunds r JOIN billing.invoices i USING (tenant, invoice_id) WHERE r.tenant = $1 AND r.idempotency_key = $2`,
      [tenant, key],
    )) as Array<Refund & { created_at: Date | string }>;
    const r = rows[0];
    return r ? { ...r, created_at: new Date(r.created_at).toISOString() } : undefined;
  }
}
