import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serviceDataSource, migrateUnderLock } from '@mesh/database';
import { directoryMigrations, DIRECTORY_SCHEMA } from '@mesh/app-directory';
import { dispatcherMigrations, DISPATCHER_SCHEMA } from '@mesh/app-dispatcher';
import { agentsMigrations, AGENTS_SCHEMA } from '@mesh/agent-runtime';
import { billingMigrations, BILLING_SCHEMA } from '@mesh/app-billing-tools';
import { freshDatabase, sql } from '../support/infra.js';

const services = [
  { schema: DIRECTORY_SCHEMA, migrations: directoryMigrations },
  { schema: DISPATCHER_SCHEMA, migrations: dispatcherMigrations },
  { schema: AGENTS_SCHEMA, migrations: agentsMigrations },
  { schema: BILLING_SCHEMA, migrations: billingMigrations },
];

const tablesIn = async (url: string, schema: string) =>
  (
    await sql<{ table_name: string }>(url, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema])
  ).map((r) => r.table_name);

test('every service migrates an empty database up and all the way back down', async () => {
  assert.ok(
    services.some((s) => s.migrations.length > 0),
    'at least one service has migrations',
  );
  const url = await freshDatabase('migrations');
  for (const svc of services) {
    if (svc.migrations.length === 0) continue;
    const ds = serviceDataSource({ url, schema: svc.schema, entities: [], migrations: svc.migrations });
    await ds.initialize();
    try {
      await migrateUnderLock(ds, svc.schema);
      const applied = await sql<{ name: string }>(url, `SELECT name FROM "${svc.schema}"."${svc.schema}_migrations" ORDER BY id`);
      assert.deepEqual(
        applied.map((r) => r.name),
        svc.migrations.map((m) => new m().name ?? m.name),
      );
      const tables = await tablesIn(url, svc.schema);
      assert.ok(tables.length > 1, `${svc.schema} has tables after migrating: ${tables.join(', ')}`);
      // Applying again is a no-op (replicas starting together).
      await migrateUnderLock(ds, svc.schema);
      for (let i = 0; i < svc.migrations.length; i++) await ds.undoLastMigration({ transaction: 'each' });
      assert.deepEqual(await tablesIn(url, svc.schema), [`${svc.schema}_migrations`], `${svc.schema} is empty again after reverting`);
    } finally {
      await ds.destroy();
    }
  }
});
