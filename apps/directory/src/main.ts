import { openServiceDatabase } from '@mesh/database';
import { runMain } from '@mesh/service';
import { loadDirectoryConfig } from './config/directory.config.js';
import { startDirectory } from './directory.app.js';
import { directoryMigrations, DIRECTORY_SCHEMA } from './database/migrations/index.js';

runMain(
  'directory',
  async (logger) => startDirectory(loadDirectoryConfig(), { logger }),
  async () => {
    const url = loadDirectoryConfig().DATABASE_URL;
    const ds = await openServiceDatabase({ url, schema: DIRECTORY_SCHEMA, entities: [], migrations: directoryMigrations });
    await ds.destroy();
  },
);
