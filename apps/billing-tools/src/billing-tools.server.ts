import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { BillingTools, type BillingAlreadyRefunded } from '@mesh/contract';
import { isTransientPostgresError } from '@mesh/database';
import { ToolMeta, type ToolTokenClaims, type ToolTokenVerifier } from '@mesh/tool-gateway';
import type { BillingHooks } from './billing-hooks.js';
import { AlreadyRefundedError, type BillingStore } from './billing.store.js';

export interface BillingServerDeps {
  store: BillingStore;
  hooks: BillingHooks;
  token: ToolTokenVerifier;
}

type Meta = Record<string, unknown> | undefined;

const ok = (data: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(data) }],
  structuredContent: data,
});
const failure = (text: string): CallToolResult => ({ content: [{ type: 'text', text }], isError: true });

/**
 * Tenant and subject of a call, only from a verified token: the call's `_meta["mesh/token"]` (the
 * worker mints one per call), else the request's bearer token when that one names a tenant.
 * `_meta` tenant or subject that disagree with the token are refused; absent ones are fine.
 */
async function callerOf(ctx: ServerContext, deps: BillingServerDeps): Promise<{ tenant: string; subject: string }> {
  const meta: Meta = ctx.mcpReq._meta;
  const bearer = ctx.http?.authInfo?.extra as ToolTokenClaims | undefined;
  const callToken = meta?.[ToolMeta.token];
  let caller: { tenant: string; subject: string } | undefined;
  if (callToken !== undefined) {
    if (typeof callToken !== 'string') throw new Error(`_meta["${ToolMeta.token}"] must be a token string`);
    caller = await deps.token.call(callToken).catch(() => {
      throw new Error(`_meta["${ToolMeta.token}"] is not a valid token for ${deps.token.audience}`);
    });
    if (bearer?.tenant !== undefined && bearer.tenant !== caller.tenant)
      throw new Error('the bearer token and the call token name different tenants');
  } else if (bearer?.tenant !== undefined) {
    caller = { tenant: bearer.tenant, subject: bearer.subject };
  }
  if (!caller) throw new Error(`a token naming the tenant is required (_meta["${ToolMeta.token}"])`);
  const claimed = meta?.[ToolMeta.tenant];
  if (claimed !== undefined && claimed !== caller.tenant)
    throw new Error(`_meta["${ToolMeta.tenant}"] does not match the tenant of the token`);
  const claimedSubject = meta?.[ToolMeta.subject];
  if (claimedSubject !== undefined && claimedSubject !== caller.subject)
    throw new Error(`_meta["${ToolMeta.subject}"] does not match the subject of the token`);
  return caller;
}

/**
 * Runs a store call again while the billing database is briefly unreachable (a restart), until the
 * caller gives up (`signal`: its request timeout or cancel). Answering with a failed result instead
 * would become the tool's recorded outcome at the caller: an invoice "not readable" or a refund
 * "failed" because of a database blip. A caller that gives up sees a timeout: an unknown outcome it
 * reconciles (refund_status) once the database is back.
 */
async function untilAvailable<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
    try {
      return await work();
    } catch (err) {
      if (signal.aborted || !isTransientPostgresError(err)) throw err;
      await sleep(wait, undefined, { signal });
    }
  }
}

/**
 * One MCP server instance exposing the billing tools: one per 2025 session, or one per
 * 2026-07-28 request (that revision is stateless). The same tools, checks and answers on both.
 */
export function createBillingServer(deps: BillingServerDeps): McpServer {
  const server = new McpServer({ name: 'billing-tools', version: '0.1.0' });

  server.registerTool(
    BillingTools.tools.getInvoice,
    {
      description: 'Look up an invoice of the calling tenant: amount, how often it was charged, what was refunded.',
      inputSchema: z.object({ invoice_id: z.string().min(1).max(64) }),
      annotations: { readOnlyHint: true },
    },
    async ({ invoice_id }, ctx) => {
      try {
        await deps.hooks.at(BillingTools.tools.getInvoice, 'before', ctx.mcpReq.signal);
        const { tenant } = await callerOf(ctx, deps);
        const invoice = await untilAvailable(ctx.mcpReq.signal, () => deps.store.invoice(tenant, invoice_id));
        return invoice ? ok({ ...invoice }) : failure(`invoice ${invoice_id} not found`);
      } catch (err) {
        return failure(err instanceof Error ? err.message : String(err));
      }
    },
  );

  server.registerTool(
    BillingTools.tools.issueRefund,
    {
      description:
        'Refund a duplicate charge of an invoice: at most the amount charged beyond the first charge, less earlier refunds. ' +
        'Idempotent per _meta idempotency key of the tenant: a repeated key returns the first refund.',
      inputSchema: z.object({
        invoice_id: z.string().min(1).max(64),
        amount_cents: z.number().int().positive(),
        reason: z.string().min(1).max(500),
      }),
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    async ({ invoice_id, amount_cents, reason }, ctx) => {
      try {
        await deps.hooks.at(BillingTools.tools.issueRefund, 'before', ctx.mcpReq.signal);
        const caller = await callerOf(ctx, deps);
        const key = ctx.mcpReq._meta?.[ToolMeta.idempotencyKey];
        if (typeof key !== 'string' || key === '') return failure(`_meta["${ToolMeta.idempotencyKey}"] is required`);
        const refund = await untilAvailable(ctx.mcpReq.signal, () =>
          deps.store.issueRefund({ ...caller, invoiceId: invoice_id, amountCents: amount_cents, reason, key }),
        );
        if (!refund) return failure(`invoice ${invoice_id} not found`);
        // The refund is committed; a hang here is the "effect happened, answer lost" case.
        await deps.hooks.at(BillingTools.tools.issueRefund, 'after-commit', ctx.mcpReq.signal);
        return ok({ ...refund });
      } catch (err) {
        if (err instanceof AlreadyRefundedError) {
          // A tool error (no refund was made) that still says which refund settled the invoice.
          const settled: BillingAlreadyRefunded = { state: 'already_refunded', invoice_id: err.invoiceId, refund_id: err.refundId };
          return { ...failure(err.message), structuredContent: { ...settled } };
        }
        return failure(err instanceof Error ? err.message : String(err));
      }
    },
  );

  server.registerTool(
    BillingTools.tools.refundStatus,
    {
      description: 'Reconcile a refund by idempotency key: {status: "applied", result} or {status: "not_found"}.',
      inputSchema: z.object({ idempotency_key: z.string().min(1).max(500) }),
      annotations: { readOnlyHint: true },
    },
    async ({ idempotency_key }, ctx) => {
      try {
        await deps.hooks.at(BillingTools.tools.refundStatus, 'before', ctx.mcpReq.signal);
        const { tenant } = await callerOf(ctx, deps);
        const refund = await untilAvailable(ctx.mcpReq.signal, () => deps.store.refundByKey(tenant, idempotency_key));
        return ok(refund ? { status: 'applied', result: { ...refund } } : { status: 'not_found' });
      } catch (err) {
        return failure(err instanceof Error ? err.message : String(err));
      }
    },
  );

  return server;
}
