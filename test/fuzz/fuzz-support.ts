import type { OutgoingHttpHeaders } from 'node:http';
import { request as httpRequest } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { eventually } from '../support/infra.js';
import { rawRequest } from '../support/raw-http.js';

/**
 * A full GC of this process. `node --test` does not pass --expose-gc, so the flag is set at run
 * time and `gc` is taken from a fresh context (the documented V8 way to reach it late).
 */
export function fullGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Heap used after two full collections (bytes). */
export async function settledHeap(): Promise<number> {
  const gc = fullGc();
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

/**
 * Waits (up to 20 s) until the heap after full collections is back near `baseline` (within 25%,
 * at least 32 MiB), prints both as a test diagnostic line and returns the settled heap; throws if
 * it never comes back.
 */
export async function heapBackNear(baseline: number): Promise<number> {
  const heap = await eventually(
    'heap back near the baseline',
    async () => {
      const h = await settledHeap();
      return h < baseline + Math.max(32 * 1024 * 1024, baseline * 0.25) ? h : undefined;
    },
    20000,
    500,
  );
  process.stdout.write(
    `# heap after GC: baseline ${(baseline / 1048576).toFixed(1)} MiB, after fuzzing ${(heap / 1048576).toFixed(1)} MiB\n`,
  );
  return heap;
}

/** Runs per property: FUZZ_RUNS overrides (e.g. 2000 for a long local run). */
export const runs = (normal: number) => Number(process.env.FUZZ_RUNS ?? normal);

// FUZZ_SEED=<the seed a failure printed> replays that run (with FUZZ_PATH=<its path>, only the
// failing case) instead of a fresh random one.
if (process.env.FUZZ_SEED)
  fc.configureGlobal({ seed: Number(process.env.FUZZ_SEED), ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}) });

/** Any JSON value, including deep nesting, long strings and big arrays. */
export const anyJson = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 5000 }) },
  { weight: 1, arbitrary: fc.array(fc.integer(), { maxLength: 2000 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 50, max: 3000 }).map((d) => {
      let v: unknown = 'leaf';
      for (let i = 0; i < d; i++) v = i % 2 ? [v] : { n: v };
      return v;
    }),
  },
);

/** Bodies that are not JSON at all: truncated JSON, garbage, invalid UTF-8. */
export const brokenBody: fc.Arbitrary<Buffer> = fc.oneof(
  fc.jsonValue().map((v) => {
    const s = JSON.stringify(v) ?? 'null';
    return Buffer.from(s.slice(0, Math.max(1, s.length - 1)) + '{');
  }),
  fc.string({ maxLength: 300 }).map((s) => Buffer.from(`{${s}`)),
  fc
    .uint8Array({ minLength: 1, maxLength: 300 })
    .map((b) => Buffer.concat([Buffer.from('{"a":"'), Buffer.from(b), Buffer.from([0xff, 0xfe, 0xc0]), Buffer.from('"}')])),
);

/** Values of the wrong type for any field. */
export const wrongType = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 50 }),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string(), { maxKeys: 3 }),
);

/** Replaces one path of an object with a value (paths given as key arrays). */
export function mutate(value: Record<string, unknown>, path: string[], replacement: unknown): Record<string, unknown> {
  const copy = structuredClone(value);
  let cur: Record<string, unknown> = copy;
  for (const k of path.slice(0, -1)) {
    const next = cur[k];
    if (typeof next !== 'object' || next === null) return copy;
    cur = next as Record<string, unknown>;
  }
  cur[path[path.length - 1]] = replacement;
  return copy;
}

/** A body as bytes, printed short in counterexamples (fast-check's toString hook). */
export function printable(b: Buffer): Buffer {
  return Object.assign(b, { [fc.toStringMethod]: () => `<${b.length} bytes: ${JSON.stringify(b.subarray(0, 160).toString('latin1'))}…>` });
}

export { fc };

/** One raw HTTP answer. */
export interface Answer {
  status: number;
  contentType: string;
  body: string;
}

/** A request whose every answer must come within 30 s; an explicit length frames any body. */
export async function sendRaw(base: string, path: string, method: string, headers: OutgoingHttpHeaders, body?: Buffer): Promise<Answer> {
  // An explicit length: node sends DELETE bodies without one, which no server could frame.
  const framed = body ? { ...headers, 'content-length': body.length } : headers;
  const res = await rawRequest(`${base}${path}`, { method, headers: framed, body, timeoutMs: 30000 });
  return { status: res.status, contentType: String(res.headers['content-type'] ?? ''), body: res.body };
}

/**
 * Like {@link sendRaw}, but an answer that opens an event stream (an accepted stream or
 * subscription) is taken as soon as its headers arrive and the connection is closed: the stream
 * itself would stay open until its task ends.
 */
export function sendRawUntilStream(
  base: string,
  path: string,
  method: string,
  headers: OutgoingHttpHeaders,
  body?: Buffer,
): Promise<Answer> {
  const framed = body ? { ...headers, 'content-length': body.length } : headers;
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers: framed }, (res) => {
      const contentType = String(res.headers['content-type'] ?? '');
      if (contentType.startsWith('text/event-stream')) {
        resolve({ status: res.statusCode ?? 0, contentType, body: '' });
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(30000, () => req.destroy(new Error(`no answer within 30 s: ${method} ${path}`)));
    req.on('error', reject);
    req.end(body);
  });
}
