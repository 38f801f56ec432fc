// The processes bench:dispatch and bench:soak measure: bench/dispatch-servers.mjs run twice (the
// dispatcher in one process, the SDK reference server in another) and bench/dispatch-worker.mjs (registers the demo echo-agent and runs its
// worker, in its own process as a real worker would run), on a database and topic prefix of their
// own. `stop()` ends both and drops the database.
//
// With `{ dispatcherProcesses: N }` (N > 1) the dispatcher is `apps/dispatcher/dist/main.js` with
// DISPATCHER_PROCESSES=N instead (a cluster primary and N workers sharing one port, as `npm start`
// runs it), and the stack has no reference server; `{ companions: false }` leaves the reference
// and the bare floor out of a single-process stack too.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { DEMO_API_KEYS } from '@mesh/auth';
import { createKafka, ensureTopics } from '@mesh/bus';
import { TopicDefinitions } from '@mesh/contract';
import { agentsNodeFlags, dispatcherNodeFlags } from '../scripts/node-flags.mjs';
import { adminDatabaseUrl, kafkaBrokers, oneOf, text } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
// BENCH_CPU_PROFILE_DIR=dir: a V8 CPU profile of the servers process, or of each process of a
// multi-process dispatcher (open it in Chrome DevTools); BENCH_CPU_PROFILE_OF=worker: the echo worker's.
const profileDir = text('BENCH_CPU_PROFILE_DIR', undefined);
const profileOf = oneOf('BENCH_CPU_PROFILE_OF', 'servers', ['servers', 'worker']);

/** Settings of bench/dispatch-servers.mjs: a benchmark measures the request path, not admission control. */
export const BENCH_ADMISSION = {
  // The per-tenant token bucket (default 50/s) and the agent backlog cap (10,000 commands) would
  // answer much of the load with 429/503; the load generator drains the backlog between scenarios.
  DISPATCHER_TENANT_RATE_PER_S: '1000000',
  DISPATCHER_TENANT_BURST: '1000000',
  // The per-tenant byte budget is off unless a bench sets it (bench/tenant-isolation.mjs measures it).
  DISPATCHER_TENANT_BYTES_PER_S: process.env.DISPATCHER_TENANT_BYTES_PER_S ?? '0',
  DISPATCHER_MAX_AGENT_BACKLOG: '100000000',
};

/** A port nothing listens on now (for a child process to take). */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });

/** `/livez` of whichever process takes a new connection; undefined while nothing answers. */
const livez = (port) =>
  new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/livez', agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? JSON.parse(body) : undefined));
    });
    req.on('error', () => resolve(undefined));
  });

/** Pids of a process's children (a cluster primary's workers); empty where pgrep is missing. */
function childPids(pid) {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * A run of its own: a database (created by the first service that connects; `dropDatabase` removes
 * it) and a topic prefix `{topicPrefix}{run}.`, as the environment of the run's processes.
 */
export function benchRun(topicPrefix) {
  const run = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const adminUrl = adminDatabaseUrl().toString();
  const dbName = `mesh_bench_${run}`;
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  const env = {
    ...process.env,
    DATABASE_URL: dbUrl.toString(),
    TOPIC_PREFIX: `${topicPrefix}${run}.`,
    KAFKA_BROKERS: kafkaBrokers().join(','),
  };
  const dropDatabase = async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(dbName)} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  };
  return { dbUrl, env, dropDatabase };
}

/** Starts the stack; `topicPrefix` names the run's topics (`{topicPrefix}{run}.`). */
export async function startDispatchStack(
  topicPrefix,
  { dispatcherProcesses = 1, companions = true, heapSnapshotDir, asStarted = false } = {},
) {
  const { dbUrl, env, dropDatabase } = benchRun(topicPrefix);
  // No directory in this stack: it stands in for it, as the owner of the cards and heartbeats
  // topics the dispatcher waits for (the echo worker registers its agent only once it is up).
  const definitions = new TopicDefinitions(env.TOPIC_PREFIX);
  await ensureTopics(createKafka({ brokers: kafkaBrokers(), clientId: 'bench-topics' }), [definitions.cards(), definitions.heartbeats()]);
  const profiled = (script) => (profileDir && script.includes(profileOf) ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
  /** Starts a child script and waits for its first stdout line. */
  async function startChild(script, args = []) {
    // The dispatcher and the echo worker run with the flags npm start gives them (not the reference).
    // SIGUSR2 makes the dispatcher write a heap snapshot into the directory (the soak's start and end).
    const snapshots = heapSnapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${heapSnapshotDir}`] : [];
    const flags =
      script === 'dispatch-worker.mjs' ? agentsNodeFlags : args[0] === 'dispatcher' ? [...dispatcherNodeFlags, ...snapshots] : [];
    const c = spawn(process.execPath, [...flags, ...profiled(script), `${root}bench/${script}`, ...args], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: c.stdout });
    // Its first line that is not a log line (a service may log at start, e.g. a warning).
    const line = await new Promise((resolve, reject) => {
      c.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
      const first = (l) => {
        if (l.startsWith('{"level"')) return;
        lines.off('line', first);
        resolve(l);
      };
      lines.on('line', first);
    });
    return { c, line, lines };
  }
  const servers = dispatcherProcesses > 1 || asStarted ? await startCluster() : await startChild('dispatch-servers.mjs', ['dispatcher']);
  // The reference and the bare HTTP floor run beside the single-process dispatcher only.
  const besides = async (role) =>
    dispatcherProcesses > 1 || !companions
      ? undefined
      : startChild('dispatch-servers.mjs', [role]).catch((err) => {
          servers.c.kill('SIGKILL');
          throw err;
        });
  const reference = await besides('reference');
  const bare = await besides('bare').catch((err) => {
    reference?.c.kill('SIGKILL');
    throw err;
  });
  /** Event-loop utilization samples of each server process (see dispatch-servers.mjs). */
  const samplesOf = (child) => {
    const samples = [];
    child?.lines.on('line', (l) => {
      try {
        samples.push(JSON.parse(l));
      } catch {
        // not a sample
      }
    });
    return samples;
  };
  const elu = { dispatcher: samplesOf(servers), reference: samplesOf(reference), bare: samplesOf(bare) };
  /** The dispatcher as `npm start` runs it with DISPATCHER_PROCESSES; `line` as dispatch-servers.mjs prints it. */
  async function startCluster() {
    const port = await freePort();
    // Cluster workers inherit the primary's execArgv (the profiler flags).
    const c = spawn(process.execPath, [...dispatcherNodeFlags, ...profiled('servers'), `${root}apps/dispatcher/dist/main.js`], {
      cwd: root,
      env: {
        ...env,
        ...BENCH_ADMISSION,
        DISPATCHER_PROCESSES: String(dispatcherProcesses),
        DISPATCHER_PORT: String(port),
        AUTH_API_KEYS: DEMO_API_KEYS,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise((_, reject) => c.once('exit', (code) => reject(new Error(`dispatcher cluster exited with ${code}`))));
    exited.catch(() => undefined); // raced while starting only; its exit at stop() is expected
    // Ready once every worker answered /livez (each on a new connection: the primary hands
    // connections to the workers in turn).
    const seen = new Set();
    for (const until = Date.now() + 120_000; seen.size < dispatcherProcesses;) {
      const live = await Promise.race([livez(port), exited]);
      if (live?.worker !== undefined) seen.add(live.worker);
      else if (dispatcherProcesses === 1 && live?.status === 'ready') seen.add(0);
      if (Date.now() > until) {
        c.kill('SIGKILL');
        throw new Error(
          `the dispatcher cluster did not become ready within 120 s (${seen.size} of ${dispatcherProcesses} workers answered)`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { c, line: JSON.stringify({ dispatcher: `http://127.0.0.1:${port}/a2a/echo-agent` }), lines: { on() {} } };
  }
  const worker = await startChild('dispatch-worker.mjs').then(
    (w) => w.c,
    (err) => {
      for (const c of [servers.c, reference?.c, bare?.c]) c?.kill('SIGKILL');
      throw err;
    },
  );
  const urls = { ...JSON.parse(servers.line), ...(reference ? JSON.parse(reference.line) : {}), ...(bare ? JSON.parse(bare.line) : {}) };
  // The worker registered the agent; the dispatcher serves it once its catalog read the record.
  for (
    let i = 0;
    !(await fetch(`${urls.dispatcher}/.well-known/agent-card.json`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i === 100) throw new Error('the dispatcher did not serve echo-agent within 10 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    /** The prefix of the stack's topics (`TopicNames` of @mesh/contract). */
    topicPrefix: env.TOPIC_PREFIX,
    /** The brokers the stack's processes connect to. */
    kafkaBrokers: env.KAFKA_BROKERS.split(','),
    /** `{ dispatcher, reference, bare }` base URLs (only the dispatcher's with DISPATCHER_PROCESSES). */
    urls,
    servers: servers.c,
    /** The processes serving the dispatcher (with DISPATCHER_PROCESSES: the primary and its workers). */
    serverPids: () => [servers.c.pid, ...(dispatcherProcesses > 1 ? childPids(servers.c.pid) : [])],
    /** The process of the reference server or the bare HTTP floor (none with DISPATCHER_PROCESSES). */
    pidsOf(role) {
      const child = { reference, bare }[role]?.c;
      return child ? [child.pid] : [];
    },
    worker,
    dbUrl,
    /**
     * Mean event-loop utilization of the dispatcher's (or the reference's, or the bare floor's) process over the samples
     * taken after `sinceMs` (undefined: none, e.g. a multi-process dispatcher).
     */
    eventLoopUtilization(sinceMs, of = 'dispatcher') {
      const xs = elu[of].filter((s) => s.atMs > sinceMs).map((s) => s.elu);
      return xs.length ? Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 100) / 100 : undefined;
    },
    async stop() {
      for (const c of [worker, servers.c, reference?.c, bare?.c].filter(Boolean)) {
        c.kill('SIGTERM');
        await new Promise((r) => c.once('exit', r));
      }
      await dropDatabase();
    },
  };
}
