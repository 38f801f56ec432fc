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

/**
 * Broker answers that refuse the record itself: sent again, it is refused again (too large for
 * the topic, or not a record the log accepts). Everything else may succeed later.
 */
const REFUSED_RECORD_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE']);

const refused = (e: ErrorFacts & { type?: unknown }): boolean => typeof e.type === 'string' && REFUSED_RECORD_TYPES.has(e.type);

/** True when the broker refused a record for what it is (see REFUSED_RECORD_TYPES), not for a passing condition. */
export function isRecordRefusedError(err: unknown): boolean {
  return anyCause(err, refused);
}
