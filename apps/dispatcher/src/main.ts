import { openServiceDatabase } from '@mesh/database';
import { runMain } from '@mesh/service';
import { loadDispatcherConfig } from './config/dispatcher.config.js';
import { startDispatcher } from './dispatcher.app.js';
import { dispatcherMigrations, DISPATCHER_SCHEMA } from './database/migrations/index.js';

runMain(
  'dispatcher',
  async (logger) => startDispatcher(loadDispatcherConfig(), { logger }),
  async () => {
    const url = loadDispatcherConfig().DATABASE_URL;
    const ds = await openServiceDatabase({ url, schema: DISPATCHER_SCHEMA, entities: [], migrations: dispatcherMigrations });
    await ds.destroy();
  },
);
