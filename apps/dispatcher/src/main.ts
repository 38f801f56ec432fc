import cluster from 'node:cluster';
import { generateKeyPairSync } from 'node:crypto';
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
  const logger = createLogger('dispatcher');
  if (!process.env.DISPATCHER_SIGNING_KEY_FILE && !process.env.DISPATCHER_SIGNING_KEY) {
    // One key for the processes of this host (they inherit the environment): a grant one signed
    // verifies at the others. Still made at start: other hosts' replicas need a configured key.
    process.env.DISPATCHER_SIGNING_KEY = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    logger.warn(
      'DISPATCHER_SIGNING_KEY_FILE is not set: the processes of this host share a key made at start; grants and tool tokens verify only while they run',
    );
  }
  runClusterPrimary({ name: 'dispatcher', processes: processes(), prepare: migrate, logger });
} else {
  // Loaded here only: the cluster primary serves no request and needs none of the app's modules.
  runMain(
    'dispatcher',
    async (logger) => (await import('./dispatcher.app.js')).startDispatcher(loadDispatcherConfig(), { logger }),
    migrate,
  );
}
