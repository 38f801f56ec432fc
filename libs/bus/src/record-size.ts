/**
 * What one record costs against a topic's `max.message.bytes`, which Kafka checks against the
 * whole record batch a produce request carries for a partition (KIP-98 format, magic 2): a
 * 61-byte batch header, then the record with its varint lengths. The producer sends a record
 * larger than its batching bound alone, so a single-record batch is what must fit.
 */

/** Kafka's default `max.message.bytes` (1 MiB plus the 12-byte log overhead), until the broker says its own. */
export const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** The record batch header (base offset … record count), `DefaultRecordBatch.RECORD_BATCH_OVERHEAD`. */
const BATCH_HEADER_BYTES = 61;

/**
 * Headers the producer may add on its way out (a PRODUCER span's `traceparent`, a `tracestate`
 * of at most 512 characters by W3C Trace Context): counted in, so a command that fits here fits
 * whatever its span adds.
 */
export const PRODUCE_HEADROOM_BYTES = 1024;

/** Bytes of a zigzag varint (Kafka's record fields are signed varints). */
function varintBytes(n: number): number {
  let v = n >= 0 ? 2 * n : -2 * n - 1;
  let bytes = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    bytes++;
  }
  return bytes;
}

const byteLength = (v: Buffer | string | null | undefined): number =>
  v === null || v === undefined ? -1 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;

/** Size of a field written as varint length + bytes (null: length -1, no bytes). */
const field = (len: number) => varintBytes(len) + Math.max(0, len);

/**
 * Bytes of a batch holding only this record, as the broker measures it against
 * `max.message.bytes` (uncompressed: the relay's producer does not compress), plus
 * {@link PRODUCE_HEADROOM_BYTES}.
 */
export function recordBatchBytes(key: Buffer | string | null, value: Buffer | string | null, headers: Record<string, string> = {}): number {
  let body = 1 /* attributes */ + 10 /* timestamp delta, at most */ + 1; /* offset delta 0 */
  body += field(byteLength(key)) + field(byteLength(value));
  const entries = Object.entries(headers);
  body += varintBytes(entries.length);
  for (const [k, v] of entries) body += field(Buffer.byteLength(k)) + field(Buffer.byteLength(v));
  return BATCH_HEADER_BYTES + varintBytes(body) + body + PRODUCE_HEADROOM_BYTES;
}
