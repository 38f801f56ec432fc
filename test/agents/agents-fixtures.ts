import { after } from 'node:test';
import { createRequire } from 'node:module';
import { openServiceDatabase } from '@mesh/database';
import { agentsMigrations, AGENTS_SCHEMA, startBillingTools, type RunningBillingTools } from '@mesh/app-agents';
import { PostgresEffectLedger, ToolGateway, type ToolGatewayOptions } from '@mesh/tool-gateway';
import type { McpServerSpec } from '@mesh/agent-sdk';
import { freshDatabase, sql } from '../support/infra.js';

/** billing-tools on a free port with test hooks on, stopped when the spec ends. */
export async function startTestBillingTools(databaseUrl: string): Promise<RunningBillingTools> {
  const billing = await startBillingTools({
    DATABASE_URL: databaseUrl,
    BILLING_TOOLS_PORT: 0 as number,
    BILLING_TEST_HOOKS: true,
    BILLING_TOKEN_SECRET: undefined,
    BILLING_TOKEN_AUDIENCE: 'billing-tools',
  });
  after(() => billing.stop());
  return billing;
}

/** A fresh database with the agents schema migrated, plus its effect ledger. */
export async function ledgerDatabase(label: string): Promise<{ url: string; ledger: PostgresEffectLedger; close: () => Promise<void> }> {
  const url = await freshDatabase(label);
  const ds = await openServiceDatabase({ url, schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations, poolSize: 4 });
  after(() => ds.destroy());
  return { url, ledger: new PostgresEffectLedger(ds), close: () => ds.destroy() };
}

/** A gateway over the given servers, closed when the spec ends. */
export function testGateway(opts: Partial<ToolGatewayOptions> & Pick<ToolGatewayOptions, 'servers' | 'ledger'>): ToolGateway {
  const gw = new ToolGateway({ clientName: 'test-worker', retryBaseMs: 20, ...opts });
  after(() => gw.close());
  return gw;
}

/** The reference MCP server from the npm registry, over stdio. */
export function everythingServer(): McpServerSpec {
  const entry = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
  return { transport: 'stdio', command: process.execPath, args: [entry, 'stdio'], requestTimeoutMs: 10000 };
}

/** Rows in billing-tools' refunds table for an invoice. */
export async function refundCount(url: string, tenant: string, invoiceId: string): Promise<number> {
  const rows = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM billing.refunds WHERE tenant = $1 AND invoice_id = $2`, [
    tenant,
    invoiceId,
  ]);
  return rows[0].n;
}
