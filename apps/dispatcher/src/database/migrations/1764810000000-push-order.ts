import type { MigrationInterface, QueryRunner } from 'typeorm';

/** In-order push delivery: finds the oldest pending delivery of a (task, config) without a scan. */
export class PushDeliveryOrder1764810000000 implements MigrationInterface {
  name = 'PushDeliveryOrder1764810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX push_deliveries_pending_order_idx ON dispatcher.push_deliveries (tenant, task_id, config_id, id) WHERE status = 'pending'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX dispatcher.push_deliveries_pending_order_idx`);
  }
}
