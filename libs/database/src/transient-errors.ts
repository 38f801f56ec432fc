import { anyCause, type ErrorFacts } from '@mesh/contract';

const TRANSIENT_CODES = new Set([
  // Network, as node-postgres reports it: the server is restarting or briefly unreachable.
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // SQLSTATE: connection exceptions (08…), admin/crash shutdown and "starting up" (57P0…), too many connections.
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);
const TRANSIENT_MESSAGE =
  /Connection terminated|terminating connection due to administrator command|the database system is (starting up|shutting down|in recovery mode)|not queryable|timeout exceeded when trying to connect/i;

function transient(e: ErrorFacts): boolean {
  return (
    (typeof e.code === 'string' && TRANSIENT_CODES.has(e.code)) || (typeof e.message === 'string' && TRANSIENT_MESSAGE.test(e.message))
  );
}

/**
 * True when a failure (or what it wraps) is Postgres being briefly unreachable — a restart, a
 * failover, a full connection table — rather than a problem with the statement
 * (`TransientErrorTest` of `@mesh/contract`).
 */
export function isTransientPostgresError(err: unknown): boolean {
  return anyCause(err, transient);
}
