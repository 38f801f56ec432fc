import type { Logger } from '@mesh/telemetry';

/** The part of a kafkajs log entry the console reads (kafkajs's own `LogEntry`). */
interface KafkaLogEntry {
  namespace: string;
  level: number;
  log: { message: string; error?: unknown };
}

// kafkajs levels: ERROR 1, WARN 2, INFO 4, DEBUG 5.
const KAFKAJS_WARN = 2;

/**
 * kafkajs log for the console: its errors and warnings go to the console's logger at WARN (the
 * console reports a failing source on the page; the log is for diagnosis, not an alarm), each cause
 * once for the life of the process, so a broker that keeps refusing one request cannot flood it.
 */
export function consoleKafkaLog(logger: Logger, maxCauses = 1000): () => (entry: KafkaLogEntry) => void {
  const log = logger.child({ src: 'kafkajs' });
  const seen = new Set<string>();
  return () =>
    ({ namespace, level, log: entry }: KafkaLogEntry) => {
      if (level > KAFKAJS_WARN) return;
      const error = typeof entry.error === 'string' ? entry.error : '';
      const cause = `${namespace}|${entry.message}|${error}`;
      if (seen.has(cause)) return;
      // Past the bound the set is cleared: a cause may then be logged once more, memory stays bounded.
      if (seen.size >= maxCauses) seen.clear();
      seen.add(cause);
      log.warn({ namespace, ...(error ? { error } : {}) }, entry.message);
    };
}
