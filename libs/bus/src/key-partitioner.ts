import { Partitioners, type Message, type PartitionerArgs } from 'kafkajs';

/**
 * Kafka's default partitioning of keyed records — `toPositive(murmur2(utf8(key))) % partitions`,
 * the Java client's and kafkajs' DefaultPartitioner's — with a 32-bit murmur2. kafkajs computes the
 * same hash over 64-bit Long values and filters the partition list for every record, which makes
 * its partitioner the producer's largest source of garbage. Records map to the partitions they
 * always did; keyless records and records with an explicit partition are left to kafkajs' own.
 */
export function keyPartitioner(): (args: PartitionerArgs) => number {
  const fallback = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition != null || message.key == null || partitionMetadata.length === 0) return fallback(args);
    return partitionOfKey(message.key, partitionMetadata.length);
  };
}

/** The partition a record keyed by `key` goes to among `partitions`: Kafka's default partitioning. */
export function partitionOfKey(key: NonNullable<Message['key']>, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}

const M = 0x5bd1e995;
const SEED = 0x9747b28c;

/** Kafka's murmur2 of a key (a string is hashed as its UTF-8 bytes), as a signed 32-bit integer. */
export function murmur2(key: NonNullable<Message['key']>): number {
  let data: Buffer;
  let length: number;
  if (typeof key === 'string') {
    // Encoded into a buffer kept for the purpose: no allocation per record.
    if (key.length * 3 > scratch.length) scratch = Buffer.allocUnsafe(Math.max(key.length * 3, scratch.length * 2));
    length = scratch.write(key, 0, 'utf8');
    data = scratch;
  } else {
    data = key;
    length = key.length;
  }
  let h = SEED ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & ~3;
  const rest = length & 3;
  if (rest === 3) h ^= data[tail + 2] << 16;
  if (rest >= 2) h ^= data[tail + 1] << 8;
  if (rest >= 1) h = Math.imul(h ^ data[tail], M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** UTF-8 takes at most three bytes per UTF-16 code unit. */
let scratch = Buffer.allocUnsafe(256);
