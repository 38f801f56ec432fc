import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { OutgoingHttpHeaders } from 'node:http';
import { InMemoryCardStream } from '@mesh/app-directory';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { anyJson, type Answer, brokenBody, fc, mutate, printable, runs, sendRaw, heapBackNear, settledHeap } from './fuzz-support.js';

// Generated hostile requests against every directory route. Answers must be RFC 9457 problems
// with a documented status and code (docs/directory.md), never a 5xx; the heap settles back.
// The in-memory card stream keeps generated registrations from creating Kafka topics.

const stream = new InMemoryCardStream();
const { dir } = await startTestDirectory('fuzz-directory', { DIRECTORY_REGISTRATIONS_PER_MINUTE: '100000' }, { cardStream: stream });

const send = (path: string, method: string, headers: OutgoingHttpHeaders, body?: Buffer): Promise<Answer> =>
  sendRaw(dir.url, path, method, headers, body);

const json = { 'content-type': 'application/json' };
const as = (key: string) => ({ ...json, authorization: `Bearer ${key}` });
// Fixed agents the generated requests aim at: one per tenant and visibility.
for (const [key, id, visibility] of [
  [KEYS.acme, 'fz-acme-private', 'private'],
  [KEYS.acme, 'fz-acme-public', 'public'],
  [KEYS.globex, 'fz-globex-tenant', 'tenant'],
] as const) {
  const r = await send('/v1/agents', 'POST', as(key), Buffer.from(JSON.stringify({ id, visibility, card: card(`Fuzz ${id}`) })));
  assert.equal(r.status, 201, r.body);
}

/** Status → problem code, from docs/directory.md "Errors". */
const DOCUMENTED: Record<number, string[]> = {
  400: ['VALIDATION_FAILED', 'BODY_TOO_LARGE', 'SIGNATURE_INVALID', 'SIGNATURE_REQUIRED'],
  401: ['UNAUTHENTICATED'],
  403: ['FORBIDDEN'],
  404: ['NOT_FOUND'],
  409: ['CONFLICT'],
  410: ['GONE'],
  429: ['RATE_LIMITED'],
};

function check(a: Answer): void {
  assert.ok(a.status < 500, `no 5xx (got ${a.status}: ${a.body.slice(0, 300)})`);
  if (a.status < 400) return assert.ok([200, 201, 204].includes(a.status), `status ${a.status}`);
  assert.ok(DOCUMENTED[a.status], `documented status, got ${a.status}: ${a.body.slice(0, 300)}`);
  assert.match(a.contentType, /^application\/problem\+json/, `problem content type for ${a.status}: ${a.body.slice(0, 200)}`);
  const p = JSON.parse(a.body) as { status: number; code: string; title: string };
  assert.equal(p.status, a.status);
  assert.ok(DOCUMENTED[a.status].includes(p.code), `code ${p.code} documented for ${a.status}`);
  assert.equal(typeof p.title, 'string');
}

/** Wrong types for string fields (a string there might be valid and that is fine, but not fuzzing). */
const notString = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
);
const cardPaths = [
  ['card'],
  ['card', 'name'],
  ['card', 'description'],
  ['card', 'version'],
  ['card', 'capabilities'],
  ['card', 'skills'],
  ['card', 'defaultInputModes'],
  ['card', 'supportedInterfaces'],
  ['card', 'signatures'],
  ['channel'],
  ['channel', 'keyTemplate'],
  ['channel', 'partitions'],
  ['visibility'],
  ['id'],
];
const registration = fc.oneof(
  fc
    .tuple(fc.constantFrom(...cardPaths), fc.oneof(notString, anyJson))
    .map(([p, v]) => mutate({ card: card('Fuzzed'), channel: {} }, p, v)),
  fc.record({
    card: fc.constant(card('Fuzzed Enum')),
    visibility: fc.string({ maxLength: 20 }).filter((s) => !['public', 'tenant', 'private'].includes(s)),
  }),
  fc.record({
    card: fc.constant(card('Fuzzed Partitions')),
    channel: fc.record({ partitions: fc.oneof(fc.integer({ min: -5, max: 0 }), fc.integer({ min: 65, max: 1e9 }), fc.double()) }),
  }),
  fc.record({ card: fc.constant(card('Fuzzed Big')), id: fc.string({ minLength: 100, maxLength: 400 }) }),
  fc.constant({ card: card('x'.repeat(70 * 1024)) }),
  anyJson,
);
const target = fc.constantFrom(
  'fz-acme-private',
  'fz-acme-public',
  'fz-globex-tenant',
  'nobody',
  'UPPER',
  '%00',
  'a'.repeat(300),
  '..%2Fx',
);
const route = fc.oneof(
  fc.constant({ method: 'POST', path: '/v1/agents' }),
  target.map((id) => ({ method: 'GET', path: `/v1/agents/${id}` })),
  target.map((id) => ({ method: 'PUT', path: `/v1/agents/${id}` })),
  target.map((id) => ({ method: 'GET', path: `/v1/agents/${id}/card` })),
  target.map((id) => ({ method: 'GET', path: `/v1/agents/${id}/versions` })),
  fc
    .tuple(target, fc.oneof(fc.integer(), fc.constantFrom('x', '-1', '1e9', '%ff')))
    .map(([id, n]) => ({ method: 'GET', path: `/v1/agents/${id}/versions/${n}` })),
  target.map((id) => ({ method: 'POST', path: `/v1/agents/${id}/heartbeat` })),
  fc
    .array(
      fc.tuple(
        fc.constantFrom(
          'q',
          'skill',
          'tag',
          'inputMode',
          'outputMode',
          'healthy',
          'visibility',
          'includeRetired',
          'cursor',
          'limit',
          'colour',
        ),
        fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('-1', '0', '1000000', 'maybe', '%ff', 'x'.repeat(3000))),
      ),
      { maxLength: 4 },
    )
    .map((qs) => ({ method: 'GET', path: `/v1/agents?${qs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}` })),
  fc.constantFrom(
    { method: 'PATCH', path: '/v1/agents' },
    { method: 'GET', path: '/v1/agents/x/y/z' },
    { method: 'GET', path: '/v1/agents?cursor=%ff' },
  ),
);
const authorization = fc.constantFrom<string | string[] | undefined>(
  `Bearer ${KEYS.acme}`,
  `Bearer ${KEYS.acme}`,
  `Bearer ${KEYS.globex}`,
  'Bearer ',
  'Bearer nope-nope-nope',
  'Bearer e30.e30.sig',
  [`Bearer ${KEYS.acme}`, `Bearer ${KEYS.globex}`],
  undefined,
);
const contentType = fc.constantFrom<string | undefined>(
  'application/json',
  'application/json',
  'text/plain',
  'application/json; charset=utf-16',
  'application/x-www-form-urlencoded',
  undefined,
);

// Warm up before the baseline.
for (let i = 0; i < 20; i++) await send('/v1/agents?q=warm', 'GET', as(KEYS.acme));
const baseline = await settledHeap();

test('found by this suite: a NUL byte in an id is a 404 (was a Postgres 500); /versions/x is VALIDATION_FAILED', async () => {
  for (const path of ['/v1/agents/%00', '/v1/agents/a%00b/card', '/v1/agents/%00/versions/1']) {
    const r = await send(path, 'GET', as(KEYS.acme));
    assert.equal(r.status, 404, path);
    assert.equal((JSON.parse(r.body) as { code: string }).code, 'NOT_FOUND');
  }
  const hb = await send('/v1/agents/%00/heartbeat', 'POST', as(KEYS.acme), Buffer.from('{}'));
  assert.equal(hb.status, 404);
  const v = await send('/v1/agents/fz-acme-private/versions/x', 'GET', as(KEYS.acme));
  assert.equal(v.status, 400);
  assert.equal((JSON.parse(v.body) as { code: string }).code, 'VALIDATION_FAILED');
});

test('every directory route: hostile bodies, fields, queries and headers get documented problems, never a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(
      route,
      authorization,
      contentType,
      fc
        .oneof(
          { weight: 4, arbitrary: registration.map((r) => Buffer.from(JSON.stringify(r) ?? 'null')) },
          { weight: 1, arbitrary: brokenBody },
        )
        .map(printable),
      async (r, auth, ct, body) => {
        const h: OutgoingHttpHeaders = {};
        if (ct) h['content-type'] = ct;
        if (auth) h['authorization'] = auth as string; // node:http sends an array as repeated headers
        check(await send(r.path, r.method, h, r.method === 'GET' ? undefined : body));
      },
    ),
    { numRuns: runs(1000) },
  );
});

test('after the fuzzing the fixed agents are unchanged for their owners and the heap is back near the baseline', async () => {
  const globexOwn = await send('/v1/agents/fz-globex-tenant', 'GET', as(KEYS.globex));
  assert.equal(globexOwn.status, 200);
  assert.equal((JSON.parse(globexOwn.body) as { version: number }).version, 1, 'no other tenant changed it');
  await heapBackNear(baseline);
});
