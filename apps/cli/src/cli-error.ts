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

/** The `code` of an error under `--json`: what kind of failure, for scripts. */
export type CliErrorCode = 'usage' | 'not_found' | 'failed' | 'unreachable';

const codeOfExit = (exitCode: number): CliErrorCode =>
  exitCode === ExitCode.usage ? 'usage' : exitCode === ExitCode.unreachable ? 'unreachable' : 'failed';

/** The credential a service refused a request for want of: `--token` (directory, dispatcher) or `--ops-token`. */
export type Credential = 'token' | 'opsToken';

/** A failure with a one-line message for the operator and the exit code it maps to. */
export class CliError extends Error {
  readonly code: CliErrorCode;

  constructor(
    message: string,
    readonly exitCode: number = ExitCode.failed,
    code?: CliErrorCode,
    /** Set when the service refused the request as unauthenticated: which credential it wanted. */
    readonly credential?: Credential,
  ) {
    super(message);
    this.name = 'CliError';
    this.code = code ?? codeOfExit(exitCode);
  }
}
