import { Command, CommanderError, Option } from 'commander';
import { CliError, ExitCode } from './cli-error.js';
import { terminalSafe } from './terminal-text.js';
import { cliContext, credentialHint, globalsOf, type CliIo } from './commands/cli.context.js';
import { registerAgentsCommand } from './commands/agents.command.js';
import { registerTasksCommand } from './commands/tasks.command.js';
import { registerLagCommand } from './commands/lag.command.js';
import { registerWorkersCommand } from './commands/workers.command.js';
import { registerDeadLettersCommand } from './commands/dead-letters.command.js';
import { registerUnknownsCommand } from './commands/unknowns.command.js';
import { registerConsoleCommand } from './commands/console.command.js';
import { registerTeamsCommand } from './commands/teams.command.js';

export type { CliIo } from './commands/cli.context.js';

const processIo: CliIo = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  env: process.env,
};

/** Builds the `mesh` program; actions write through `io` and throw CliError on failure. */
export function buildProgram(io: CliIo = processIo, jsonRequested = false): Command {
  const program = new Command('mesh')
    .description('Operate an agent mesh: agents, tasks, lag, dead letters and unknown tool outcomes')
    .showHelpAfterError()
    .addOption(new Option('--directory-url <url>', 'directory base URL').env('MESH_DIRECTORY_URL').default('http://localhost:8081'))
    .addOption(new Option('--dispatcher-url <url>', 'dispatcher base URL').env('MESH_DISPATCHER_URL').default('http://localhost:8080'))
    .addOption(
      new Option('--agents-url <url>', 'agents runtime base URL (its /ops endpoints)')
        .env('MESH_AGENTS_URL')
        .default('http://localhost:8082'),
    )
    .addOption(new Option('--token <token>', 'API key or JWT for the directory and dispatcher').env('MESH_TOKEN'))
    .addOption(new Option('--ops-token <token>', 'bearer token of the agents /ops endpoints (AGENTS_OPS_TOKEN)').env('MESH_OPS_TOKEN'))
    .addOption(new Option('--brokers <list>', 'Kafka brokers host:port[,…]').env('KAFKA_BROKERS').default('localhost:9092'))
    .addOption(new Option('--prefix <prefix>', 'topic prefix of the installation').env('TOPIC_PREFIX').default(''))
    .option('--json', 'machine-readable output (one JSON document)')
    .configureOutput({
      writeOut: (s) => io.out(s.trimEnd()),
      // Under --json, runCli prints a usage error as one JSON document instead of commander's text and help.
      writeErr: (s) => {
        if (!jsonRequested) io.err(s.trimEnd());
      },
    })
    .exitOverride();
  const context = cliContext(program, io);
  registerAgentsCommand(program, context);
  registerTasksCommand(program, context);
  registerLagCommand(program, context);
  registerWorkersCommand(program, context);
  registerDeadLettersCommand(program, context);
  registerUnknownsCommand(program, context);
  registerConsoleCommand(program, context);
  registerTeamsCommand(program, context);
  return program;
}

/** Runs `mesh` with `argv` (without node and script) and returns the exit code; never exits the process. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  // Known before parsing, so a usage error (which stops the parse) is reported as JSON too.
  const json = argv.includes('--json');
  const program = buildProgram(io, json);
  const fail = (exitCode: number, code: string, message: string) => {
    if (json) io.out(JSON.stringify({ error: { code, message } }));
    else io.err(terminalSafe(`mesh: ${message}`));
    return exitCode;
  };
  try {
    await program.parseAsync(argv, { from: 'user' });
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; everything else is a usage error (commander printed it unless --json).
      if (err.exitCode === 0) return ExitCode.ok;
      // A command group without its subcommand: commander shows the help, its error says "(outputHelp)".
      const message =
        err.code === 'commander.help' ? 'a subcommand is required: see `mesh <command> --help`' : err.message.replace(/^error: /, '');
      return json ? fail(ExitCode.usage, 'usage', message) : ExitCode.usage;
    }
    if (err instanceof CliError) {
      // A credential refused: say where it came from (the local env file was read, or is the failure itself).
      const hint = err.credential ? credentialHint(err, globalsOf(program, io.env)) : '';
      return fail(err.exitCode, err.code, err.message + hint);
    }
    if (json) return fail(ExitCode.failed, 'failed', err instanceof Error ? err.message : String(err));
    return fail(ExitCode.failed, 'failed', `unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
}
