import cluster, { type Worker } from 'node:cluster';
import { CLUSTER_METRICS_ENV, serveClusterMetrics, silentLogger, type Logger } from '@mesh/telemetry';

/** IPC message the primary sends a worker to drain and exit (runMain handles it like SIGTERM). */
export const CLUSTER_STOP_MESSAGE = 'mesh:stop';

export interface ClusterPrimaryOptions {
  /** Service name, in the lines the primary prints. */
  name: string;
  /** Workers to keep running; each runs the entry script again as a full replica. */
  processes: number;
  /** Runs once before any worker starts (the schema's migrations, so workers never race them). */
  prepare?: () => Promise<void>;
  logger?: Logger;
  /** Delay before replacing a worker that died; doubles while replacements die before listening, up to 30 s. */
  restartDelayMs?: number;
  /** Called with the exit code once every worker is gone (default: process.exit). */
  exit?: (code: number) => void;
}

/** What a running primary offers its caller (tests). */
export interface ClusterPrimary {
  /** The live workers' process ids. */
  pids(): number[];
  /** Drains every worker (as SIGTERM does) and resolves with the exit code once they are gone. */
  stop(): Promise<number>;
}

const MAX_RESTART_DELAY_MS = 30_000;

/**
 * The primary of a service run as N node:cluster workers sharing its port (the primary accepts
 * connections and hands them to the workers in turn). It serves no request itself (it only
 * collects the workers' metrics for the one a scrape reached): it runs `prepare`, forks the
 * workers, replaces one that dies after it listened, and on SIGTERM/SIGINT tells each to drain
 * and exits once all are gone. A worker that dies before it ever listened is a start
 * failure (bad configuration, a dependency missing) when no worker has listened yet: the primary
 * stops the others and exits 1 instead of forking in a loop.
 */
export function runClusterPrimary(opts: ClusterPrimaryOptions): ClusterPrimary {
  if (!cluster.isPrimary) throw new Error('runClusterPrimary runs in the cluster primary only');
  const log = (opts.logger ?? silentLogger).child({ src: 'cluster' });
  const baseDelay = opts.restartDelayMs ?? 1000;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const listened = new WeakSet<Worker>();
  let anyListened = false;
  let stopping = false;
  let exitCode = 0;
  let restartDelay = baseDelay;
  let finished: (code: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => (finished = resolve));

  const live = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  const fork = () => {
    const w = cluster.fork({ [CLUSTER_METRICS_ENV]: '1' });
    w.once('listening', () => {
      listened.add(w);
      anyListened = true;
      restartDelay = baseDelay;
      log.info({ worker: w.id, pid: w.process.pid }, 'worker listening');
    });
  };
  const stopAll = (code: number) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return done;
    stopping = true;
    for (const w of live()) w.send(CLUSTER_STOP_MESSAGE);
    if (live().length === 0) finished(exitCode);
    return done;
  };

  cluster.on('exit', (w, code, signal) => {
    if (stopping) {
      if (live().length === 0) finished(exitCode);
      return;
    }
    const how = signal ?? `code ${code}`;
    if (!listened.has(w) && !anyListened) {
      process.stderr.write(`${opts.name}: a worker failed to start (${how}); stopping\n`);
      void stopAll(1);
      return;
    }
    // A replica that crashed (or was killed) is replaced; its tasks are in Postgres and its
    // consumer group members leave, so nothing is lost with it.
    log.warn({ worker: w.id, pid: w.process.pid, exit: how, restartInMs: restartDelay }, 'worker died; replacing it');
    const delay = restartDelay;
    if (!listened.has(w)) restartDelay = Math.min(restartDelay * 2, MAX_RESTART_DELAY_MS);
    setTimeout(() => stopping || fork(), delay);
  });

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal: no more draining.
      for (const w of live()) w.process.kill('SIGKILL');
      exit(130);
      return;
    }
    log.info({ signal, workers: live().length }, 'draining workers');
    void stopAll(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A scrape reaches one worker; it answers with all of theirs, collected here.
  serveClusterMetrics();
  void done.then((code) => exit(code));

  (opts.prepare ?? (async () => undefined))().then(
    () => {
      if (stopping) return finished(exitCode);
      for (let i = 0; i < opts.processes; i++) fork();
    },
    (err: unknown) => {
      process.stderr.write(`${opts.name}: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
      void stopAll(1);
    },
  );
  return { pids: () => live().map((w) => w.process.pid!), stop: () => stopAll(0) };
}
