import cluster from 'node:cluster';
import { openServiceDatabase } from '@mesh/database';
import { runClusterPrimary, runMain } from '@mesh/service';
import { createLogger } from '@mesh/telemetry';
import { loadDispatcherConfig } from './config/dispatcher.config.js';
import { dispatcherMigrations, DISPATCHER_SCHEMA } from './database/migrations/index.js';

const migrate = async () => {
  const url = loadDispatcherConfig().DATABASE_URL;
  const ds = await openServiceDatabase({ url, schema: DISPATCHER_SCHEMA, entities: [], migrations: dispatcherMigrations });
  await ds.destroy();
};

/** DISPATCHER_PROCESSES; a bad value is reported by the start that reads the whole configuration. */
function processes(): number {
  try {
    return loadDispatcherConfig().DISPATCHER_PROCESSES;
  } catch {
    return 1;
  }
}

if (cluster.isPrimary && process.env.MIGRATE_ONLY !== 'true' && processes() > 1) {
  // N replicas on this host sharing the port; the primary migrates first so they never race.
  runClusterPrimary({ name: 'dispatcher', processes: processes(), prepare: migrate, logger: createLogger('dispatcher') });
} else {
  // Loaded here only: the cluster primary serves no request and needs none of the app's modules.
  runMain(
    'dispatcher',
    async (logger) => (await import('./dispatcher.app.js')).startDispatcher(loadDispatcherConfig(), { logger }),
    migrate,
  );
}
