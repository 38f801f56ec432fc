import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `push_configs.wire_version`: the A2A version the config was set over. A webhook a 0.3 caller
 * registered gets 0.3-shaped bodies (the SDK's V03PushNotificationSerializer); configs stored
 * before the column were all delivered in the 1.0 shape and stay so.
 */
export class PushWireVersion1765400000000 implements MigrationInterface {
  name = 'PushWireVersion1765400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.push_configs ADD COLUMN wire_version text NOT NULL DEFAULT '1.0'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dispatcher.push_configs DROP COLUMN wire_version`);
  }
}
