import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { PRODUCE_HEADROOM_BYTES, recordBatchBytes } from './record-size.js';

test('a small record costs the batch header, its fields and the headroom', () => {
  // 61 header + length varint 1 + (1 attr + 10 ts + 1 offset + key 1+1 + value 1+2 + 1 header count) 18
  assert.equal(recordBatchBytes('k', 'vv'), 61 + 1 + 18 + PRODUCE_HEADROOM_BYTES);
});

test('headers and multi-byte varints are counted', () => {
  const value = 'x'.repeat(200); // length 200 → zigzag 400 → two varint bytes
  const bare = recordBatchBytes('k', value);
  const withHeader = recordBatchBytes('k', value, { tenant: 'acme' });
  assert.equal(withHeader - bare, 1 + 6 + 1 + 4);
  // 64 bytes need a two-byte length (zigzag 128): one more byte of value, one of length.
  assert.equal(recordBatchBytes('k', 'x'.repeat(63)) + 2, recordBatchBytes('k', 'x'.repeat(64)));
});

test('a UTF-8 value counts its bytes, not its characters', () => {
  assert.equal(recordBatchBytes('k', 'é'.repeat(10)) - recordBatchBytes('k', 'e'.repeat(10)), 10);
});

test('a record just over 1 MiB of value is over the default limit', () => {
  assert.ok(recordBatchBytes('k', 'x'.repeat(1_048_576)) > 1_048_588);
});
