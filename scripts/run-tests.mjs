#!/usr/bin/env node
// Runs the unit specs (*.spec.js beside the code) and the integration specs (test/**/*.integration-spec.js)
// with node's test runner. Integration specs get a real broker (started here, or reused when one
// already listens) and a per-run Postgres database and topic prefix, so runs never see each other's
// data; files run in MESH_TEST_LANES (2) lanes side by side, each with its own prefix and database.
// Usage: node scripts/run-tests.mjs [--unit|--integration] [name-filter...]
import { spawnSync, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseEnv } from 'node:util';
import pg from 'pg';
import { Kafka, logLevel } from 'kafkajs';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const only = args.find((a) => a === '--unit' || a === '--integration');
const filters = args.filter((a) => !a.startsWith('--'));

function walk(dir, out = []) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e === 'node_modules') continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

const distDirs = [
  ...['libs', 'apps'].flatMap((top) => readdirSync(join(root, top)).map((d) => join(root, top, d, 'dist'))),
  join(root, 'test', 'dist'),
];
const all = distDirs.flatMap((d) => walk(d));
const matches = (f) => filters.length === 0 || filters.some((x) => f.includes(x));
const unit = all.filter((f) => f.endsWith('.spec.js') && matches(f)).sort();
// The chaos spec (test/chaos/) runs last, in a `node --test` pass of its own (node sorts the files
// it is given, so an order in one list is not kept): it stops its own broker and restarts
// Postgres, which must never overlap another spec.
const isLast = (f) => f.includes(`${join('test', 'dist', 'chaos')}/`);
// Every integration file isolates by topic prefix and database, so they run `MESH_TEST_LANES` (2) at
// a time. The files below run after the others, in two lanes of their own: the first's run `npm
// start` (its fixed ports 8080–8083: never two at once), pack the team packages or drive a browser;
// the second's start their own brokers or a cluster, or load the machine on purpose.
const APART = [
  ['readme/', 'byo/', 'foundation/restart-demo', 'cli/console', 'dispatcher/stream-cap', 'agents/scaling'],
  ['bus/cluster-leader-kill', 'dispatcher/kafka-outage', 'dispatcher/cluster.', 'directory/catalog-recovery', 'security/stream-load'],
].map((group) => group.map((p) => join('test', 'dist', p)));
const apartLane = (f) => APART.findIndex((group) => group.some((p) => f.includes(p)));
const integration = all.filter((f) => f.endsWith('.integration-spec.js') && matches(f)).sort();
const files = only === '--unit' ? unit : only === '--integration' ? integration : [...unit, ...integration];
if (files.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(1);
}

// A spec never reads the checkout's own `npm start` settings (.mesh/local.env): it names its own file or none.
const env = { ...process.env, MESH_LOCAL_ENV: join(root, '.mesh', 'none-under-test.env') };
let startedKafka = false;
let testDb;
if (files.some((f) => f.endsWith('.integration-spec.js'))) {
  const status = spawnSync(join(root, 'scripts/kafka.sh'), ['status'], { stdio: 'ignore' });
  if (status.status !== 0) {
    const started = spawnSync(join(root, 'scripts/kafka.sh'), ['start'], { stdio: 'inherit' });
    if (started.status !== 0) process.exit(started.status ?? 1);
    startedKafka = true;
  }
  // The local broker authenticates (scripts/kafka.sh): specs connect as its admin principal unless told otherwise.
  if (!env.KAFKA_USERNAME) {
    const creds = spawnSync(join(root, 'scripts/kafka.sh'), ['credentials'], { encoding: 'utf8' });
    Object.assign(env, parseEnv(creds.stdout));
  }
  const run = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  env.MESH_TEST_RUN = run;
  env.KAFKA_BROKERS ??= '127.0.0.1:9092';
  env.TOPIC_PREFIX = `t${run}.`;
  const base = new URL(env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  testDb = `mesh_test_${run}`;
  base.pathname = `/${testDb}`;
  env.DATABASE_URL = base.toString();
}

/**
 * One `node --test` pass over `list`, one file at a time, with `extraEnv` over the run's env;
 * resolves with its exit code. A file's process exits when its tests are done (--test-force-exit),
 * so a client left retrying a stopped broker cannot hang the run.
 */
const running = new Set();
const testArgs = ['--test', '--test-concurrency=1', '--test-force-exit', '--test-reporter=spec'];
function pass(list, extraEnv = {}) {
  const child = spawn(process.execPath, [...testArgs, ...list.map((f) => relative(root, f))], {
    cwd: root,
    env: { ...env, ...extraEnv },
    stdio: 'inherit',
  });
  running.add(child);
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? (signal ? 1 : 0));
    }),
  );
}

/**
 * The files of `list` in `lanes` passes side by side (`laneOf` picks a file's), each lane with its
 * own topic prefix and database name under the run's, so no two files ever share a topic or a database.
 */
async function lanesOf(list, lanes, laneOf = (_f, i) => i % lanes) {
  if (lanes <= 1 || !testDb) return pass(list);
  const split = Array.from({ length: lanes }, () => []);
  list.forEach((f, i) => split[laneOf(f, i)].push(f));
  const codes = await Promise.all(
    split
      .filter((l) => l.length > 0)
      .map((l, i) => {
        const lane = String.fromCharCode(97 + i);
        const db = new URL(env.DATABASE_URL);
        db.pathname = `/${testDb}_${lane}`;
        return pass(l, {
          MESH_TEST_RUN: `${env.MESH_TEST_RUN}${lane}`,
          TOPIC_PREFIX: `${env.TOPIC_PREFIX}${lane}.`,
          DATABASE_URL: db.toString(),
        });
      }),
  );
  return codes.find((c) => c !== 0) ?? 0;
}
let interrupted = false;
const forward = (sig) => {
  interrupted = true;
  for (const child of running) child.kill(sig);
};
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
const lanes = Math.max(1, Number(env.MESH_TEST_LANES ?? 2));
const passes = [
  [files.filter((f) => !isLast(f) && apartLane(f) < 0), lanes],
  [files.filter((f) => !isLast(f) && apartLane(f) >= 0), Math.min(lanes, 2), (f) => (lanes > 1 ? apartLane(f) : 0)],
  [files.filter(isLast), 1],
].filter(([l]) => l.length > 0);
let code = 0;
for (const [list, width, laneOf] of passes) if (!interrupted) code = (await lanesOf(list, width, laneOf)) || code;
// Clean-up, whatever the outcome: the run's databases and topics go, the broker stops if this run started it.
{
  if (testDb) {
    // Tests create databases named after the run; drop them all so nothing accumulates.
    const admin = new pg.Client({ connectionString: env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
    try {
      await admin.connect();
      const { rows } = await admin.query('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${testDb}%`]);
      for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    } catch (err) {
      console.error(`run-tests: could not drop test databases: ${err.message}`);
    } finally {
      await admin.end().catch(() => {});
    }
  }
  if (testDb && !startedKafka) {
    // The broker outlives the run: delete the run's topics so a dev broker does not fill up.
    const sasl = env.KAFKA_USERNAME
      ? { mechanism: env.KAFKA_SASL_MECHANISM ?? 'scram-sha-512', username: env.KAFKA_USERNAME, password: env.KAFKA_PASSWORD }
      : undefined;
    const admin = new Kafka({ brokers: env.KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING, ...(sasl ? { sasl } : {}) }).admin();
    try {
      await admin.connect();
      const mine = (await admin.listTopics()).filter((t) => t.startsWith(env.TOPIC_PREFIX));
      for (let i = 0; i < mine.length; i += 200) await admin.deleteTopics({ topics: mine.slice(i, i + 200), timeout: 30000 });
    } catch (err) {
      console.error(`run-tests: could not delete test topics: ${err.message}`);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }
  if (startedKafka) spawnSync(join(root, 'scripts/kafka.sh'), ['stop'], { stdio: 'inherit' });
  process.exit(code);
}
