import { format } from 'node:util';
import { trace } from '@opentelemetry/api';
import type { LoggerService } from '@nestjs/common';
import { pino, type DestinationStream, type Logger, type Level } from 'pino';

/** The platform's logger (pino): services create one and hand it to each part that logs. */
export type { Logger } from 'pino';

/** Level when LOG_LEVEL is not set: warnings and errors only (access and progress lines are info). */
export const DEFAULT_LOG_LEVEL = 'warn';

/**
 * Structured JSON logs (pino): every line has `time`, `service`, `level` and, while a span is
 * active, its `trace_id` and `span_id`, so a log line can be found from a trace and back. Parts
 * of a service log through children (`logger.child({ src: 'outbox-relay' })`).
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? DEFAULT_LOG_LEVEL, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Level names, not numbers: the lines are read by people and by log shippers alike.
      formatters: { level: (label) => ({ level: label }) },
      mixin() {
        const sc = trace.getActiveSpan()?.spanContext();
        return sc ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
      },
    },
    destination,
  );
}

/** A logger that drops everything: the default of parts built without one (unit tests). */
export const silentLogger: Logger = pino({ level: 'silent' });

/** Nest's logger interface over pino (nestjs-pino has no release for both Nest 12 and Node 20). */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string): void {
    this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}

type ConsoleMethod = 'error' | 'warn' | 'info' | 'log' | 'debug' | 'trace';
const CONSOLE_LEVELS: Record<ConsoleMethod, Level> = {
  error: 'error',
  warn: 'warn',
  info: 'info',
  log: 'info',
  debug: 'debug',
  trace: 'debug',
};

/** Short names for the libraries known to print: `src` on their lines. */
const KNOWN_SOURCES: Record<string, string> = { '@a2a-js/sdk': 'a2a-sdk', '@modelcontextprotocol/sdk': 'mcp-sdk' };

/** The package whose code called console (the first frame past this module), or `console` for the service's own code. */
export function consoleCaller(stack: string | undefined): string {
  const caller = (stack ?? '')
    .split('\n')
    .slice(1)
    .find((frame) => !/[\\/]telemetry[\\/](?:dist|src)[\\/]logging\.[jt]s/.test(frame));
  const pkg = [...(caller ?? '').matchAll(/node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/g)].at(-1)?.[1].replace('\\', '/');
  return pkg ? (KNOWN_SOURCES[pkg] ?? pkg) : 'console';
}

/** Server-side faults among protocol error reasons: these stay at the level they were printed at. */
const FAULT_REASONS = new Set(['INTERNAL_ERROR', 'INTERNAL', 'INVALID_AGENT_RESPONSE']);

/**
 * A protocol error the caller caused and was answered with (a refused request, an unknown task):
 * a JSON-RPC code other than the internal error (-32603), or an A2A `reason` (google.rpc
 * ErrorInfo) other than a server fault. The SDKs print these with console.error, but they are not
 * the service's errors.
 */
function isAnsweredRefusal(err: Error): boolean {
  const { code, reason } = err as { code?: unknown; reason?: unknown };
  if (typeof reason === 'string' && /^[A-Z][A-Z0-9_]*$/.test(reason)) return !FAULT_REASONS.has(reason);
  return typeof code === 'number' && code >= -32768 && code <= -32000 && code !== -32603;
}

/**
 * Routes console output (what libraries such as the A2A and MCP SDKs print) into `logger`, one
 * JSON line per call with `src` naming the library; an Error argument goes to `err` (with its
 * stack as a field, not as extra lines). Returns the function that puts the console back.
 */
export function routeConsoleTo(logger: Logger): () => void {
  const saved = new Map<ConsoleMethod, (...args: unknown[]) => void>();
  for (const method of Object.keys(CONSOLE_LEVELS) as ConsoleMethod[]) {
    saved.set(method, console[method]);
    console[method] = (...args: unknown[]) => {
      const err = args.find((a): a is Error => a instanceof Error);
      const level = err && isAnsweredRefusal(err) ? 'debug' : CONSOLE_LEVELS[method];
      if (!logger.isLevelEnabled(level)) return;
      const msg = format(...args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : a)));
      logger[level]({ src: consoleCaller(new Error().stack), ...(err ? { err } : {}) }, msg);
    };
  }
  return () => {
    for (const [method, fn] of saved) console[method] = fn;
  };
}
