import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';

// patches/kafkajs+2.2.4.patch, applied by npm ci (postinstall): see patches/README.md.
const require = createRequire(import.meta.url);

interface KafkaEncoder {
  writeVarInt(v: number): KafkaEncoder;
  writeUVarInt(v: number): KafkaEncoder;
  writeVarIntString(v: string | null): KafkaEncoder;
  writeVarIntBytes(v: Buffer | string | null): KafkaEncoder;
  writeInt32(v: number): KafkaEncoder;
  writeInt8(v: number): KafkaEncoder;
  writeVarLong(v: number): KafkaEncoder;
  writeBuffer(v: Buffer): KafkaEncoder;
  readonly buffer: Buffer;
}
const Encoder = require('kafkajs/src/protocol/encoder.js') as new (initialSize?: number) => KafkaEncoder;
const encodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: {
  offsetDelta?: number;
  timestampDelta?: number;
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers?: Record<string, string | Buffer | Array<string | Buffer>>;
}) => KafkaEncoder;
const Header = require('kafkajs/src/protocol/recordBatch/header/v0/index.js') as (h: {
  key: string;
  value: string | Buffer;
}) => KafkaEncoder;
const groupMessagesPerPartition = require('kafkajs/src/producer/groupMessagesPerPartition.js') as (args: {
  topic: string;
  partitionMetadata: unknown[];
  messages: Array<{ key: string }>;
  partitioner: (a: { message: { key: string } }) => number;
}) => Record<number, Array<{ key: string }>>;

/** kafkajs 2.2.4's own unsigned varint (LEB128 over the 32-bit pattern), the bytes the patch must keep. */
function referenceUVarInt(value: number): number[] {
  const out: number[] = [];
  while ((value & 0xffffff80) !== 0) {
    out.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  out.push(value & 0x7f);
  return out;
}
const zigZag = (v: number) => (v << 1) ^ (v >> 31);

test('the kafkajs patch is applied (npm ci runs patch-package)', () => {
  const source = readFileSync(require.resolve('kafkajs/src/protocol/encoder.js'), 'utf8');
  assert.match(source, /this\.buf = Buffer\.allocUnsafe\(/, 'patches/kafkajs+2.2.4.patch is not applied: run npm ci');
});

test('varints are written byte for byte as kafkajs wrote them, also after the buffer grows', () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.integer(), fc.integer({ min: -200, max: 200 })), { maxLength: 300 }), (values) => {
      const e = new Encoder(4); // grows while writing
      const expected: number[] = [];
      for (const v of values) {
        e.writeVarInt(v);
        expected.push(...referenceUVarInt(zigZag(v)));
        e.writeUVarInt(v >>> 0);
        expected.push(...referenceUVarInt(v >>> 0));
      }
      assert.deepEqual([...e.buffer], expected);
    }),
    { numRuns: 500 },
  );
});

test('a varlong is the bytes kafkajs wrote, for small numbers (the fast path) and beyond', () => {
  const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: number): unknown };
  fc.assert(
    fc.property(fc.oneof(fc.integer({ min: -0x40000001, max: 0x40000001 }), fc.maxSafeInteger()), (v) => {
      const fast = new Encoder(1).writeVarLong(v).buffer;
      const slow = new Encoder(1).writeVarLong(Long.fromValue(v) as never).buffer; // a Long takes kafkajs' own path
      assert.deepEqual(fast, slow);
    }),
    { numRuns: 1000 },
  );
});

test('strings, bytes and fixed ints around varints keep their layout in a pooled buffer', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 600 }), fc.option(fc.uint8Array({ maxLength: 600 })), (s, bytes) => {
      const value = bytes === null ? null : Buffer.from(bytes);
      const e = new Encoder().writeInt32(7).writeVarIntString(s).writeVarIntBytes(value);
      const utf8 = Buffer.from(s, 'utf8');
      const expected = Buffer.concat([
        Buffer.from([0, 0, 0, 7]),
        Buffer.from(referenceUVarInt(zigZag(utf8.length))),
        utf8,
        value === null
          ? Buffer.from(referenceUVarInt(zigZag(-1)))
          : Buffer.concat([Buffer.from(referenceUVarInt(zigZag(value.length))), value]),
      ]);
      assert.deepEqual(e.buffer, expected);
    }),
    { numRuns: 300 },
  );
});

test('a record with headers is the bytes kafkajs wrote: each header once, in order, after the value', () => {
  const text = fc.string({ unit: 'grapheme', maxLength: 80 });
  const headerValue = fc.oneof(
    text,
    fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b)),
  );
  fc.assert(
    fc.property(
      fc.record({
        offsetDelta: fc.nat({ max: 100_000 }),
        timestampDelta: fc.nat({ max: 1_000_000 }),
        key: fc.option(text),
        value: fc.option(fc.string({ unit: 'grapheme', maxLength: 2000 })),
        headers: fc.dictionary(text, fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 })), { maxKeys: 16 }),
      }),
      (r) => {
        const pairs = Object.entries(r.headers).flatMap(([key, v]) => (Array.isArray(v) ? v : [v]).map((value) => ({ key, value })));
        const encoded = pairs.map(Header);
        const body = new Encoder()
          .writeInt8(0)
          .writeVarLong(r.timestampDelta)
          .writeVarInt(r.offsetDelta)
          .writeVarIntBytes(r.key)
          .writeVarIntBytes(r.value)
          .writeVarInt(encoded.length);
        for (const h of encoded) body.writeBuffer(h.buffer);
        const expected = Buffer.concat([new Encoder().writeVarInt(body.buffer.length).buffer, body.buffer]);
        assert.deepEqual(encodeRecord(r).buffer, expected);
      },
    ),
    { numRuns: 300 },
  );
});

interface KafkaDecoder {
  readVarInt(): number;
}
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => KafkaDecoder;
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js') as (
  d: KafkaDecoder,
  ctx: object,
) => { headers: Record<string, unknown>; key: Buffer | null; value: Buffer | null; offset: string; timestamp: string };

/** kafkajs 2.2.4's fold of a record's headers (one spread per header), which the patch replaces. */
function referenceHeaders(pairs: Array<{ key: string; value: Buffer | null }>): Record<string, unknown> {
  /* eslint-disable @typescript-eslint/no-explicit-any */
  return pairs.reduce(
    (obj: any, { key, value }) => ({
      ...obj,
      [key]: obj[key] === undefined ? value : Array.isArray(obj[key]) ? obj[key].concat([value]) : [obj[key], value],
    }),
    {},
  );
  /* eslint-enable @typescript-eslint/no-explicit-any */
}

test("a record's headers decode to the object kafkajs built: repeats, inherited names, __proto__, any bytes", () => {
  const keyBytes = fc.oneof(
    fc
      .constantFrom('mesh-kind', 'mesh-tenant', '__proto__', 'toString', 'constructor', 'hasOwnProperty', '', '0')
      .map((k) => Buffer.from(k)),
    fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b)), // not always UTF-8
  );
  const header = fc.record({ key: keyBytes, value: fc.option(fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b))) });
  fc.assert(
    fc.property(fc.array(header, { maxLength: 20 }), fc.nat({ max: 100_000 }), (headers, offsetDelta) => {
      const body = new Encoder().writeInt8(0).writeVarLong(5).writeVarInt(offsetDelta).writeVarIntBytes('k').writeVarIntBytes('v');
      body.writeVarInt(headers.length);
      for (const h of headers) body.writeVarIntBytes(h.key).writeVarIntBytes(h.value);
      const decoded = decodeRecord(new Decoder(body.buffer), { firstOffset: '10', firstTimestamp: '1000', magicByte: 2 });
      const expected = referenceHeaders(headers.map((h) => ({ key: h.key.toString('utf8'), value: h.value })));
      assert.deepStrictEqual(decoded.headers, expected);
      assert.equal(Object.getPrototypeOf(decoded.headers), Object.prototype);
      assert.deepEqual(Object.keys(decoded.headers), Object.keys(expected));
      assert.equal(decoded.offset, String(10 + offsetDelta));
      assert.equal(decoded.timestamp, '1005');
      assert.deepEqual([decoded.key, decoded.value], [Buffer.from('k'), Buffer.from('v')]);
    }),
    { numRuns: 1000 },
  );
});

test('records are grouped per partition in their order', () => {
  fc.assert(
    fc.property(fc.array(fc.nat({ max: 7 }), { maxLength: 200 }), (partitions) => {
      const messages = partitions.map((p, i) => ({ key: `${p}:${i}` }));
      const grouped = groupMessagesPerPartition({
        topic: 't',
        partitionMetadata: [{}],
        messages,
        partitioner: ({ message }) => Number(message.key.split(':')[0]),
      });
      for (const p of new Set(partitions))
        assert.deepEqual(
          grouped[p],
          messages.filter((m) => m.key.startsWith(`${p}:`)),
        );
      assert.equal(Object.values(grouped).flat().length, messages.length);
    }),
  );
});

interface KafkaRequestQueue {
  push(r: { entry: object; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(r: { correlationId: number; payload: Buffer | null; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
  readonly throttleCheckTimeoutId: unknown;
}
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (o: object) => KafkaRequestQueue;
const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };
const newQueue = () =>
  new RequestQueue({
    maxInFlightRequests: null,
    requestTimeout: 30000,
    enforceRequestTimeout: false,
    clientId: 't',
    broker: 'b',
    logger: quietLogger,
  });
const entry = (correlationId: number, answered: () => void) => ({
  correlationId,
  apiKey: 0,
  apiName: 'Produce',
  apiVersion: 0,
  resolve: answered,
  reject: (err: unknown) => assert.fail(String(err)),
});

test('an idle request queue arms no timer (kafkajs 2.2.4 re-armed a 1 ms one forever)', async () => {
  const q = newQueue();
  let answered = 0;
  for (let id = 1; id <= 3; id++) {
    q.push({ entry: entry(id, () => answered++), expectResponse: true, sendRequest() {} });
    q.fulfillRequest({ correlationId: id, payload: Buffer.alloc(0), size: 0 });
  }
  assert.equal(answered, 3);
  assert.equal(q.throttleCheckTimeoutId, null);
  q.destroy();
});

test('a request held back by broker throttling is still sent once the throttle ends', async () => {
  const q = newQueue();
  q.maybeThrottle(30);
  let sent = false;
  q.push({ entry: entry(1, () => undefined), expectResponse: true, sendRequest: () => (sent = true) });
  assert.equal(sent, false);
  for (let i = 0; i < 100 && !sent; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(sent, true);
  q.destroy();
});
