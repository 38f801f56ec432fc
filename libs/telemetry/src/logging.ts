import { trace } from '@opentelemetry/api';
import type { LoggerService } from '@nestjs/common';
import { pino, type Logger } from 'pino';

/**
 * Structured JSON logs (pino) that carry the active trace and span ids, so a log line can be
 * found from a trace and back. Task ids are added by callers as bindings (`logger.child({ task_id })`).
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin() {
      const sc = trace.getActiveSpan()?.spanContext();
      return sc ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
    },
  });
}

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
