import { anyCause, type ErrorFacts } from '@mesh/contract';

/** kafkajs errors of a broker that is restarting or briefly unreachable. */
const TRANSIENT_NAMES = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError']);

const transient = (e: ErrorFacts): boolean => typeof e.name === 'string' && TRANSIENT_NAMES.has(e.name);

/**
 * True when a failure (or what it wraps) is the Kafka cluster being briefly unreachable rather
 * than a problem with the record (`TransientErrorTest` of `@mesh/contract`).
 */
export function isTransientKafkaError(err: unknown): boolean {
  return anyCause(err, transient);
}
