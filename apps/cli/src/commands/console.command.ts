import { Option, type Command } from 'commander';
import type { CliContext } from './cli.context.js';
import { nonNegative, port, positive } from './option.parsers.js';

/** `mesh console`: the operator console, served on this machine. */
export function registerConsoleCommand(program: Command, { io, globals: g, kafka }: CliContext): void {
  program
    .command('console')
    .description(
      'serve the operator console on this machine: agents, lag charts, tasks and their detail, workers, dead letters, unknowns, actions',
    )
    .option('--port <n>', 'port to listen on (0: any free port)', port, 8090)
    .option('--host <host>', 'address to bind (it shows what your tokens may see: keep it local)', '127.0.0.1')
    .addOption(
      new Option(
        '--start-timeout <ms>',
        "the dispatcher's DISPATCHER_START_TIMEOUT_MS: warn of submitted tasks past their start-by (0: off)",
      )
        .env('DISPATCHER_START_TIMEOUT_MS')
        .argParser(nonNegative)
        .default(86_400_000),
    )
    .option('--sample-interval <ms>', 'how often the lag and throughput charts are sampled', positive, 5000)
    .action(async (o: { port: number; host: string; startTimeout: number; sampleInterval: number }) => {
      const { startConsole } = await import('../console/console-server.js');
      const c = await startConsole(
        {
          directoryUrl: g().directoryUrl,
          dispatcherUrl: g().dispatcherUrl,
          agentsUrl: g().agentsUrl,
          ...(g().token ? { token: g().token } : {}),
          ...(g().opsToken ? { opsToken: g().opsToken } : {}),
          ...kafka(),
          startTimeoutMs: o.startTimeout,
        },
        { port: o.port, host: o.host, sampleIntervalMs: o.sampleInterval },
      );
      io.err(`operator console on ${c.url} (Ctrl-C to stop)`);
      await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
      await c.stop();
    });
}
