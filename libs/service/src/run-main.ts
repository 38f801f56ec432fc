import cluster from 'node:cluster';
import { createLogger, routeConsoleTo, startTelemetry, type Logger } from '@mesh/telemetry';
import { CLUSTER_STOP_MESSAGE } from './cluster-primary.js';

/** A fatal line: plain text on stderr, because the process exits right after it. */
const fatal = (line: string) => void process.stderr.write(`${line}\n`);

/**
 * Runs a service's start-up with tracing on (OTLP export only when OTEL_* variables ask for it)
 * and the process's one logger (JSON lines on stdout at LOG_LEVEL), which `start` hands to each
 * part; console output of libraries is routed into it. A failure to start prints one plain line
 * on stderr naming the problem and exits non-zero, instead of a stack trace loop; SIGINT/SIGTERM
 * call `stop` once (graceful drain), a second signal exits at once.
 */
export function runMain(
  name: string,
  start: (logger: Logger) => Promise<{ stop: () => Promise<void> }>,
  migrate?: () => Promise<void>,
): void {
  if (migrate && process.env.MIGRATE_ONLY === 'true') return runMigrateOnly(name, migrate);
  let stopping = false;
  const telemetry = startTelemetry({ serviceName: `agent-mesh-${name}` });
  const logger = createLogger(name);
  routeConsoleTo(logger);
  // In a cluster worker the primary asks by message (a terminal's Ctrl-C may also have signalled
  // this worker: the message is then no second signal); a primary that is gone leaves no one to
  // replace or stop the worker, so it drains too. Asked before it started, it drains once started.
  let drainWhenStarted: Record<string, unknown> | undefined;
  let askDrain: (why: Record<string, unknown>) => void = (why) => void (drainWhenStarted ??= why);
  if (cluster.isWorker) {
    process.on('message', (m) => m === CLUSTER_STOP_MESSAGE && askDrain({ reason: 'cluster primary asked' }));
    process.on('disconnect', () => askDrain({ reason: 'cluster primary gone' }));
  }
  start(logger).then(
    (svc) => {
      const drain = (why: Record<string, unknown>) => {
        if (stopping) return;
        stopping = true;
        logger.info(why, 'draining');
        svc
          .stop()
          .then(() => telemetry.shutdown())
          .then(
            () => process.exit(0),
            (err: unknown) => {
              fatal(`${name}: shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
              process.exit(1);
            },
          );
      };
      const onSignal = (sig: NodeJS.Signals) => {
        if (stopping) process.exit(130);
        drain({ signal: sig });
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      askDrain = drain;
      if (drainWhenStarted) drain(drainWhenStarted);
    },
    (err: unknown) => {
      fatal(`${name}: failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

/**
 * `MIGRATE_ONLY=true` (the chart's migration Job): migrate the service's schema under the advisory
 * lock, close, exit 0, without Kafka or HTTP; a failure exits 1 with one line.
 */
function runMigrateOnly(name: string, migrate: () => Promise<void>): void {
  migrate().then(
    () => {
      process.stderr.write(`${name}: migrations applied (MIGRATE_ONLY)\n`);
      process.exit(0);
    },
    (err: unknown) => {
      fatal(`${name}: migration failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
