import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { keyPartitioner, murmur2 } from './key-partitioner.js';

// kafkajs' own hash, the reference every record was partitioned by so far.
const kafkajsMurmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2.js') as (
  key: string | Buffer,
) => number;

const partitions = (n: number): PartitionMetadata[] =>
  Array.from({ length: n }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));

test('murmur2 equals kafkajs (and the Java client) for any string or byte key', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 300 })), (key) => {
      assert.equal(murmur2(key), kafkajsMurmur2(key));
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      const key = Buffer.from(bytes);
      assert.equal(murmur2(key), kafkajsMurmur2(key));
    }),
    { numRuns: 1000 },
  );
});

test('murmur2 matches the Java client on known keys', () => {
  // Values of org.apache.kafka.common.utils.Utils.murmur2 (its test vectors).
  assert.equal(murmur2(''), 275646681);
  assert.equal(murmur2('21'), -973932308);
  assert.equal(murmur2('foobar'), -790332482);
  assert.equal(murmur2('a-little-bit-long-string'), -985981536);
  assert.equal(murmur2('a-little-bit-longer-string'), -1486304829);
  assert.equal(murmur2('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), -58897971);
  assert.equal(murmur2(Buffer.from('abc')), 479470107);
});

test('keyed records go to the partition kafkajs DefaultPartitioner chose', () => {
  const ours = keyPartitioner();
  const theirs = Partitioners.DefaultPartitioner();
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), fc.integer({ min: 1, max: 64 }), (key, n) => {
      const args = { topic: 't', partitionMetadata: partitions(n), message: { key, value: 'v' } };
      assert.equal(ours(args), theirs(args));
    }),
    { numRuns: 2000 },
  );
});

test('an explicit partition wins; a keyless record goes round robin over the partitions with a leader', () => {
  const p = keyPartitioner();
  const meta = partitions(4).map((m) => (m.partitionId === 2 ? { ...m, leader: -1 } : m));
  assert.equal(p({ topic: 't', partitionMetadata: meta, message: { key: 'k', value: 'v', partition: 3 } }), 3);
  const chosen = new Set(Array.from({ length: 12 }, () => p({ topic: 't', partitionMetadata: meta, message: { value: 'v' } })));
  assert.deepEqual([...chosen].sort(), [0, 1, 3]);
});
