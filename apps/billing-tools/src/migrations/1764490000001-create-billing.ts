import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Invoices and refunds of the demo billing system, with demo invoices per tenant. */
export class CreateBilling1764490000001 implements MigrationInterface {
  name = 'CreateBilling1764490000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE billing.invoices (
        tenant text NOT NULL,
        invoice_id text NOT NULL,
        customer text NOT NULL,
        amount_cents integer NOT NULL CHECK (amount_cents > 0),
        currency text NOT NULL,
        charges integer NOT NULL CHECK (charges >= 0),
        PRIMARY KEY (tenant, invoice_id)
      )`);
    await q.query(`
      CREATE TABLE billing.refunds (
        refund_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant text NOT NULL,
        invoice_id text NOT NULL,
        amount_cents integer NOT NULL CHECK (amount_cents > 0),
        reason text NOT NULL,
        idempotency_key text NOT NULL UNIQUE,
        subject text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        FOREIGN KEY (tenant, invoice_id) REFERENCES billing.invoices (tenant, invoice_id)
      )`);
    // Demo data (listed in docs/agents.md): one duplicate charge and one normal invoice per tenant.
    await q.query(`
      INSERT INTO billing.invoices (tenant, invoice_id, customer, amount_cents, currency, charges) VALUES
        ('acme', 'INV-2291', 'Acme Retail GmbH', 12900, 'EUR', 2),
        ('acme', 'INV-2292', 'Acme Retail GmbH', 4900, 'EUR', 1),
        ('globex', 'INV-3107', 'Globex Logistics Ltd', 25000, 'USD', 2),
        ('globex', 'INV-3108', 'Globex Logistics Ltd', 9900, 'USD', 1)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE billing.refunds`);
    await q.query(`DROP TABLE billing.invoices`);
  }
}
