export { buildProgram, runCli, type CliIo } from './cli.js';
export { CliError, ExitCode } from './cli-error.js';
export { textMessage } from './a2a-client.js';
export { startConsole, type RunningConsole } from './console/console-server.js';
export type { ConsoleTargets, Overview } from './console/overview.js';
