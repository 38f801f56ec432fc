export {
  ensureDatabase,
  dropDatabase,
  serviceDataSource,
  openServiceDatabase,
  initializeServiceDatabase,
  migrateUnderLock,
  PostgresProbe,
} from './database-bootstrap.js';
export { StatementBatcher } from './statement-batcher.js';
export { isTransientPostgresError } from './transient-errors.js';
export { preparedQuery, rowsOf, type SqlRunner } from './prepared-query.js';
export { batchKeys } from './batch-keys.js';
