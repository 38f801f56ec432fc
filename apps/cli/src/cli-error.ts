/** Exit codes of `mesh`: scripts can tell a bad command line from a refusal from an outage. */
export const ExitCode = {
  ok: 0,
  /** The service answered with a refusal or the thing was not found. */
  failed: 1,
  /** Bad command line (unknown command, missing argument, invalid option value). */
  usage: 2,
  /** A service could not be reached. */
  unreachable: 3,
} as const;

/** A failure with a one-line message for the operator and the exit code it maps to. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
