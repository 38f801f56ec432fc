export { buildProgram, runCli, type CliIo } from './cli.js';
export { CliError, ExitCode } from './cli-error.js';
