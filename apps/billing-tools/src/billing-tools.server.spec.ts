import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { HmacToolTokenMinter, hmacToolTokenVerifier, ToolMeta } from '@mesh/tool-gateway';
import { BillingHooks } from './billing-hooks.js';
import { createBillingServer } from './billing-tools.server.js';
import { AlreadyRefundedError, type BillingStore } from './billing.store.js';

const secret = 'billing-secret-for-unit-tests';
const acmeToken = await new HmacToolTokenMinter(secret).mint({ audience: 'billing-tools', tenant: 'acme', subject: 'alice', taskId: 't1' });

async function connect(store: Partial<BillingStore>): Promise<Client> {
  const server = createBillingServer({
    store: store as BillingStore,
    hooks: new BillingHooks(false),
    token: hmacToolTokenVerifier(secret, 'billing-tools'),
  });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'spec', version: '0' });
  await client.connect(b);
  return client;
}
const invoice = {
  invoice_id: 'INV-1',
  customer: 'C',
  amount_cents: 100,
  currency: 'EUR',
  charges: 2,
  refunded_cents: 0,
  refund_ids: [],
  duplicate_charge: true,
};
const call = (client: Client) =>
  client.callTool({ name: 'get_invoice', arguments: { invoice_id: 'INV-1' }, _meta: { [ToolMeta.token]: acmeToken } });

test('a database restart under a tool call is waited out, not answered as the tool failing', async () => {
  let calls = 0;
  const client = await connect({
    invoice: async () => {
      calls++;
      if (calls === 1) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      if (calls === 2) throw Object.assign(new Error('the database system is starting up'), { code: '57P03' });
      return invoice;
    },
  });
  const result = await call(client);
  assert.equal(result.isError, undefined);
  assert.deepEqual(result.structuredContent, invoice);
  assert.equal(calls, 3);
});

test("any other store failure is the tool's answer at once", async () => {
  let calls = 0;
  const client = await connect({
    invoice: async () => {
      calls++;
      throw new Error('relation "billing.invoices" does not exist');
    },
  });
  const result = await call(client);
  assert.equal(result.isError, true);
  assert.equal(calls, 1);
});

test('a refund with nothing left to refund is a tool error that names the refund that settled the invoice', async () => {
  const client = await connect({
    issueRefund: async () => {
      throw new AlreadyRefundedError('INV-1', 'r-41');
    },
  });
  const result = await client.callTool({
    name: 'issue_refund',
    arguments: { invoice_id: 'INV-1', amount_cents: 100, reason: 'duplicate charge' },
    _meta: { [ToolMeta.token]: acmeToken, [ToolMeta.idempotencyKey]: 'k-2' },
  });
  assert.equal(result.isError, true);
  assert.deepEqual(result.structuredContent, { state: 'already_refunded', invoice_id: 'INV-1', refund_id: 'r-41' });
});
