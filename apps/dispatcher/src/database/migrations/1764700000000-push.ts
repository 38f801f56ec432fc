import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Push notification configs (per tenant and task) and the delivery ledger driven by the event stream. */
export class PushNotifications1764700000000 implements MigrationInterface {
  name = 'PushNotifications1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE dispatcher.push_configs (
        tenant text NOT NULL,
        task_id text NOT NULL REFERENCES dispatcher.tasks(id) ON DELETE CASCADE,
        id text NOT NULL,
        url text NOT NULL,
        token text NOT NULL DEFAULT '',
        auth_scheme text,
        auth_credentials text,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, task_id, id)
      )`);
    await q.query(`
      CREATE TABLE dispatcher.push_deliveries (
        id bigserial PRIMARY KEY,
        event_id text NOT NULL,
        tenant text NOT NULL,
        task_id text NOT NULL,
        config_id text NOT NULL,
        body jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending',
        attempts integer NOT NULL DEFAULT 0,
        next_at timestamptz NOT NULL DEFAULT now(),
        last_error text,
        delivered_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant, task_id, config_id, event_id)
      )`);
    await q.query(`CREATE INDEX push_deliveries_due_idx ON dispatcher.push_deliveries (next_at) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE dispatcher.push_deliveries`);
    await q.query(`DROP TABLE dispatcher.push_configs`);
  }
}
