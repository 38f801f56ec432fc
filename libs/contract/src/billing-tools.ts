/**
 * The demo billing MCP server (`apps/billing-tools`) as the server and its callers (the refund
 * agent) both name it: they run in different processes and must agree on every name here.
 */
export const BillingTools = {
  /** Audience of the tool tokens the server accepts (its `BILLING_TOKEN_AUDIENCE` default). */
  audience: 'billing-tools',
  /** HTTP port by default (`BILLING_TOOLS_PORT`); MCP is served at `/mcp`. */
  port: 8083,
  /** Tool names as the server registers them. */
  tools: {
    getInvoice: 'get_invoice',
    issueRefund: 'issue_refund',
    /** Reconciles a refund by idempotency key: `{status: "applied", result}` or `{status: "not_found"}`. */
    refundStatus: 'refund_status',
  },
} as const;

/** An invoice as `get_invoice` reports it. */
export interface BillingInvoice {
  invoice_id: string;
  customer: string;
  amount_cents: number;
  currency: string;
  charges: number;
  refunded_cents: number;
  /** Ids of the refunds made on it, oldest first. */
  refund_ids: string[];
  /** True when the customer was charged more than once. */
  duplicate_charge: boolean;
}

/** A refund as `issue_refund` and `refund_status` report it. */
export interface BillingRefund {
  refund_id: string;
  invoice_id: string;
  amount_cents: number;
  currency: string;
  state: 'issued';
  idempotency_key: string;
  created_at: string;
}

/**
 * The structured content of `issue_refund`'s tool error when nothing is left to refund because
 * earlier refunds (another caller's, under another idempotency key) already settled the duplicate
 * charge: `refund_id` is the latest of them.
 */
export interface BillingAlreadyRefunded {
  state: 'already_refunded';
  invoice_id: string;
  refund_id: string;
}
