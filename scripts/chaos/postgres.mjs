// The Postgres restart fault of the chaos run (scripts/chaos.mjs): `pg_ctlcluster <version> <name>
// restart` of the local cluster that serves the run's database. Only as root, only for a cluster on
// this machine listening on the database URL's port, never when CHAOS_RESTART_POSTGRES=0. Whatever
// happens, the cluster is started again and waited for (pg_isready) before the fault returns.
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

const run = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8', timeout: 120000 });

/** { cluster: ['15', 'main'], port } when the restart can be done here, else { skip: why }. */
export function postgresRestartPlan(databaseUrl, setting = process.env.CHAOS_RESTART_POSTGRES) {
  if (setting === '0') return { skip: 'CHAOS_RESTART_POSTGRES=0' };
  const url = new URL(databaseUrl);
  const port = Number(url.port || 5432);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) return { skip: `the database is not on this machine (${url.hostname})` };
  if (process.getuid?.() !== 0) return { skip: 'not running as root (pg_ctlcluster needs it)' };
  const ls = run('pg_lsclusters', ['--no-header']);
  if (ls.error || ls.status !== 0) return { skip: 'pg_ctlcluster/pg_lsclusters not available' };
  // "15  main    5432 online postgres /var/lib/postgresql/15/main /var/log/..."
  const line = ls.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => Number(f[2]) === port && f[3]?.startsWith('online'));
  if (!line) return { skip: `no online local cluster listens on port ${port}` };
  return { cluster: [line[0], line[1]], port };
}

function ready(port) {
  return run('pg_isready', ['-h', '127.0.0.1', '-p', String(port), '-t', '2']).status === 0;
}

/** Starts the cluster if it does not answer, and waits until it does (throws after 60 s). */
export async function ensurePostgres(plan) {
  if (ready(plan.port)) return;
  run('pg_ctlcluster', [...plan.cluster, 'start']);
  for (let i = 0; i < 120; i++) {
    if (ready(plan.port)) return;
    await sleep(500);
  }
  throw new Error(`Postgres cluster ${plan.cluster.join(' ')} does not answer on port ${plan.port} after a restart`);
}

/** Restarts the cluster (fast shutdown: sessions are cut). Returns how long it was unavailable, in ms. */
export async function restartPostgres(plan) {
  const t0 = Date.now();
  try {
    const r = run('pg_ctlcluster', ['--mode', 'fast', ...plan.cluster, 'restart']);
    if (r.status !== 0) throw new Error(`pg_ctlcluster ${plan.cluster.join(' ')} restart failed: ${r.stderr || r.error}`);
  } finally {
    await ensurePostgres(plan);
  }
  return Date.now() - t0;
}
