import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Idempotency keys belong to a tenant: the same key used by two tenants is two refunds. */
export class RefundKeysPerTenant1764490000002 implements MigrationInterface {
  name = 'RefundKeysPerTenant1764490000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE billing.refunds DROP CONSTRAINT refunds_idempotency_key_key`);
    await q.query(`ALTER TABLE billing.refunds ADD CONSTRAINT refunds_tenant_idempotency_key_key UNIQUE (tenant, idempotency_key)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE billing.refunds DROP CONSTRAINT refunds_tenant_idempotency_key_key`);
    await q.query(`ALTER TABLE billing.refunds ADD CONSTRAINT refunds_idempotency_key_key UNIQUE (idempotency_key)`);
  }
}
