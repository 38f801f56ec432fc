import { startTelemetry } from '@mesh/telemetry';

/**
 * Runs a service's start-up with tracing on (OTLP export only when OTEL_* variables ask for it).
 * A failure prints one line naming the problem and exits non-zero, instead of a stack trace loop;
 * SIGINT/SIGTERM call `stop` once (graceful drain), a second signal exits at once.
 */
export function runMain(name: string, start: () => Promise<{ stop: () => Promise<void> }>, migrate?: () => Promise<void>): void {
  if (migrate && process.env.MIGRATE_ONLY === 'true') return runMigrateOnly(name, migrate);
  let stopping = false;
  const telemetry = startTelemetry({ serviceName: `agent-mesh-${name}` });
  start().then(
    (svc) => {
      const onSignal = (sig: NodeJS.Signals) => {
        if (stopping) process.exit(130);
        stopping = true;
        console.error(`${name}: ${sig} received, draining`);
        svc
          .stop()
          .then(() => telemetry.shutdown())
          .then(
            () => process.exit(0),
            (err: unknown) => {
              console.error(`${name}: shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
              process.exit(1);
            },
          );
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    },
    (err: unknown) => {
      console.error(`${name}: failed to start: ${err instanceof Error ? err.message : String(err)}`);
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
      console.error(`${name}: migrations applied (MIGRATE_ONLY)`);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(`${name}: migration failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
