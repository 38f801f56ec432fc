// The processes bench:dispatch and bench:soak measure: bench/dispatch-servers.mjs (dispatcher plus
// the SDK reference server) and bench/dispatch-worker.mjs (registers the demo echo-agent and runs its
// worker, in its own process as a real worker would run), on a database and topic prefix of their
// own. `stop()` ends both and drops the database.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import pg from 'pg';

const root = new URL('..', import.meta.url).pathname;

/** Starts the stack; `topicPrefix` names the run's topics (`{topicPrefix}{run}.`). */
export async function startDispatchStack(topicPrefix) {
  const run = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const dbName = `mesh_bench_${run}`;
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  const env = {
    ...process.env,
    DATABASE_URL: dbUrl.toString(),
    TOPIC_PREFIX: `${topicPrefix}${run}.`,
    KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
  };
  /** Starts a child script and waits for its first stdout line. */
  async function startChild(script) {
    const c = spawn(
      process.execPath,
      [
        // BENCH_CPU_PROFILE_DIR=dir: a V8 CPU profile of the servers process (open it in Chrome DevTools).
        ...(process.env.BENCH_CPU_PROFILE_DIR && script.includes(process.env.BENCH_CPU_PROFILE_OF ?? 'servers')
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`]
          : []),
        `${root}bench/${script}`,
      ],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: c.stdout });
    const line = await new Promise((resolve, reject) => {
      c.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
      lines.once('line', resolve);
    });
    return { c, line, lines };
  }
  const servers = await startChild('dispatch-servers.mjs');
  /** The servers' event-loop utilization samples (see dispatch-servers.mjs). */
  const elu = [];
  servers.lines.on('line', (l) => {
    try {
      elu.push(JSON.parse(l));
    } catch {
      // not a sample
    }
  });
  const worker = (await startChild('dispatch-worker.mjs')).c;
  const urls = JSON.parse(servers.line);
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
    /** `{ dispatcher, reference }` base URLs. */
    urls,
    servers: servers.c,
    worker,
    dbUrl,
    /** Mean event-loop utilization of the servers process over the samples taken after `sinceMs` (undefined: none). */
    eventLoopUtilization(sinceMs) {
      const xs = elu.filter((s) => s.atMs > sinceMs).map((s) => s.elu);
      return xs.length ? Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 100) / 100 : undefined;
    },
    async stop() {
      for (const c of [worker, servers.c]) {
        c.kill('SIGTERM');
        await new Promise((r) => c.once('exit', r));
      }
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(dbName)} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}
