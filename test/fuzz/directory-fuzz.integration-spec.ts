import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { OutgoingHttpHeaders } from 'node:http';
import pg from 'pg';
import { InMemoryCardStream, registrySchemas, searchQuerySchema } from '@mesh/app-directory';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { type Answer, brokenBody, fc, printable, runs, sendRaw, heapBackNear, settledHeap, anyJson } from './fuzz-support.js';
import {
  bodyText,
  controlStrings,
  DeepJson,
  deepNesting,
  hugeString,
  numericExtremes,
  numericText,
  schemaFields,
  setPath,
  wrongTypeFor,
  type SchemaField,
} from './hostile-values.js';

// Schema-driven fuzzing of every directory route. The request shapes are walked from the zod
// schemas the directory validates with (registration, update, heartbeat, search query), and each
// hostile value class goes into each field: control characters and lone surrogates, strings over
// 10 KiB, numeric extremes, 10,000-deep nesting, wrong types, unknown fields. Path parameters
// (ids, version numbers) and decoded cursors get their own classes. Answers must be documented
// RFC 9457 problems naming the field, never a 5xx; a refused request stores no row and creates no
// command topic (the in-memory card stream records every topic the directory asks for); the heap
// settles back. Regression tests for each concrete finding run against real Kafka at the end.

const stream = new InMemoryCardStream();
const { dir, databaseUrl } = await startTestDirectory(
  'fuzz-directory',
  { DIRECTORY_REGISTRATIONS_PER_MINUTE: '1000000', DIRECTORY_HEARTBEATS_PER_MINUTE: '1000000' },
  { cardStream: stream },
);
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
// The directory's after hook (registered first) drops the database under this connection.
db.on('error', () => undefined);
after(() => db.end().catch(() => undefined));

const send = (path: string, method: string, headers: OutgoingHttpHeaders, body?: Buffer): Promise<Answer> =>
  sendRaw(dir.url, path, method, headers, body);
const json = { 'content-type': 'application/json' };
const as = (key: string) => ({ ...json, authorization: `Bearer ${key}` });
/** A body with at most one deep-nesting value in it (see DeepJson). */
const deepIn = (h?: Hostile) => (h?.value instanceof DeepJson ? h.value : undefined);
const post = (path: string, body: unknown, key: string = KEYS.acme, h?: Hostile) =>
  send(path, 'POST', as(key), Buffer.from(bodyText(body, deepIn(h))));
const put = (path: string, body: unknown, h?: Hostile) => send(path, 'PUT', as(KEYS.acme), Buffer.from(bodyText(body, deepIn(h))));

/** A card with every optional field of the schema filled in, so each path exists before it is replaced. */
const FULL_CARD = card('Fuzz Full', {
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extendedAgentCard: false,
    extensions: [{ uri: 'https://ext.example.com/x', description: 'ext', required: false, params: { k: 'v' } }],
  },
  supportedInterfaces: [{ url: 'https://agents.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: 't' }],
  provider: { url: 'https://example.com', organization: 'Example' },
  documentationUrl: 'https://example.com/docs',
  iconUrl: 'https://example.com/icon.png',
  // Key `k`: the schema walk enters records at key `k`.
  securitySchemes: { k: { apiKeySecurityScheme: { location: 'header', name: 'X-Key', description: 'key' } } },
  securityRequirements: [{ schemes: { k: { list: ['read'] } } }],
  skills: [
    {
      id: 'refund',
      name: 'Refund an order',
      description: 'Issues a refund',
      tags: ['billing'],
      examples: ['refund order 42'],
      inputModes: ['text/plain'],
      outputModes: ['text/plain'],
      securityRequirements: [{ schemes: { k: { list: [] } } }],
    },
  ],
});
const CHANNEL = { keyTemplate: '{tenant}:{agent_id}', partitions: 2 };

/** Fixed agents the generated requests aim at. */
for (const [key, id, visibility] of [
  [KEYS.acme, 'fz-put', 'tenant'],
  [KEYS.acme, 'fz-acme-private', 'private'],
  [KEYS.globex, 'fz-globex-public', 'public'],
] as const) {
  const r = await post('/v1/agents', { id, visibility, card: FULL_CARD, channel: CHANNEL }, key);
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

interface Problem {
  status: number;
  code: string;
  title: string;
  errors?: Array<{ field: string; message: string }>;
}

/** No 5xx; an error is a documented problem. Returns the problem (undefined for a success). */
function check(a: Answer): Problem | undefined {
  assert.ok(a.status < 500, `no 5xx (got ${a.status}: ${a.body.slice(0, 300)})`);
  if (a.status < 400) return void assert.ok([200, 201, 204].includes(a.status), `status ${a.status}`);
  assert.ok(DOCUMENTED[a.status], `documented status, got ${a.status}: ${a.body.slice(0, 300)}`);
  assert.match(a.contentType, /^application\/problem\+json/, `problem content type for ${a.status}: ${a.body.slice(0, 200)}`);
  const p = JSON.parse(a.body) as Problem;
  assert.equal(p.status, a.status);
  // Bad input names what was bad: a field, or the body, path or header as a whole.
  if (a.status === 400) assert.ok((p.errors ?? []).length > 0, `a 400 names the field: ${a.body.slice(0, 300)}`);
  assert.ok(DOCUMENTED[a.status].includes(p.code), `code ${p.code} documented for ${a.status}`);
  assert.equal(typeof p.title, 'string');
  return p;
}

/** 400 VALIDATION_FAILED whose errors name `field` (or a field inside it). */
function refusedNaming(a: Answer, field: string): void {
  const p = check(a);
  assert.equal(a.status, 400, `400 for ${field}, got ${a.status}: ${a.body.slice(0, 300)}`);
  const named = (p?.errors ?? []).map((e) => e.field);
  assert.ok(
    // The body itself: any field inside it is the one to name.
    (field === 'body' && named.length > 0) || named.some((f) => f === field || f.startsWith(`${field}.`) || f.startsWith(`${field}[`)),
    `the error names ${field}: ${JSON.stringify(named).slice(0, 300)}`,
  );
}

const fieldName = (path: Array<string | number>) =>
  path.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : out === '' ? p : `${out}.${p}`), '') || 'body';

/** One hostile value for a field, with the class it belongs to. */
type Hostile = { cls: 'control' | 'huge' | 'number' | 'deep' | 'type' | 'unknown-field'; value?: unknown };
function hostileFor(f: SchemaField): fc.Arbitrary<Hostile> {
  const classes: Array<fc.Arbitrary<Hostile>> = [
    controlStrings.map((value) => ({ cls: 'control' as const, value })),
    hugeString.map((value) => ({ cls: 'huge' as const, value })),
    numericExtremes.map((value) => ({ cls: 'number' as const, value })),
    deepNesting.map((value) => ({ cls: 'deep' as const, value })),
    wrongTypeFor(f.kind).map((value) => ({ cls: 'type' as const, value })),
  ];
  if (f.kind === 'object') classes.push(fc.constant({ cls: 'unknown-field' as const }));
  return fc.oneof(...classes);
}

/**
 * What a hostile value in field `f` must get. Control characters and lone surrogates, and depth,
 * are refused everywhere (keys and free-form records included); other classes wherever the schema
 * types the field; a free-form value (`unknown`) may be accepted.
 */
function expectAnswer(a: Answer, f: SchemaField, h: Hostile): void {
  const name = fieldName(f.path);
  if (h.cls === 'control' || h.cls === 'deep') return refusedNaming(a, name);
  if (h.cls === 'unknown-field') {
    if (f.strict) return refusedNaming(a, f.path.length === 0 ? 'colour' : `${name}.colour`);
    const p = check(a);
    if (!p) assert.ok(!a.body.includes('colour'), 'unknown card fields are dropped, never stored');
    return;
  }
  // Free-form values (extension params, signature headers) take any JSON; every typed field is bounded under 10 KiB.
  if (f.kind === 'unknown') return void check(a);
  return refusedNaming(a, name);
}

/** Rows and command topics now: a refused request must change neither. */
async function sideEffects(id: string): Promise<{ row: boolean; topic: boolean; version: number | null }> {
  const r = await db.query<{ version: number }>('SELECT version FROM directory.agent WHERE id = $1', [id]);
  return { row: r.rowCount === 1, topic: stream.topics.has(id), version: r.rows[0]?.version ?? null };
}

const registerFields = [{ path: [], kind: 'object', strict: true } as SchemaField, ...schemaFields(registrySchemas(64).register)];
const updateFields = [{ path: [], kind: 'object', strict: true } as SchemaField, ...schemaFields(registrySchemas(64).update)];
const heartbeatFields = [{ path: [], kind: 'object', strict: true } as SchemaField, ...schemaFields(registrySchemas(64).heartbeat)];

/** A body with one field replaced by a hostile value (or given an unknown sibling). */
function bodyWith(base: Record<string, unknown>, f: SchemaField, h: Hostile): unknown {
  if (h.cls !== 'unknown-field') return setPath(base, f.path, h.value);
  if (f.path.length === 0) return { ...base, colour: 1 };
  const existing = f.path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], base);
  return setPath(base, f.path, { ...(existing as object), colour: 1 });
}

// Warm up before the baseline.
for (let i = 0; i < 20; i++) await send('/v1/agents?q=warm', 'GET', as(KEYS.acme));
const baseline = await settledHeap();

test('the schema walk covers every field of the registration, update, heartbeat and search shapes', () => {
  const names = registerFields.map((f) => fieldName(f.path));
  for (const n of [
    'id',
    'visibility',
    'channel.partitions',
    'card.skills[0].tags[0]',
    'card.capabilities.extensions[0].params.k',
    'card.signatures[0].protected',
    'card.supportedInterfaces[0].tenant',
    'card.securitySchemes.k.apiKeySecurityScheme.location',
    'card.securitySchemes.k.oauth2SecurityScheme.flows.authorizationCode.tokenUrl',
    'card.securityRequirements[0].schemes.k.list[0]',
    'card.skills[0].securityRequirements[0].schemes.k.list[0]',
  ])
    assert.ok(names.includes(n), `walked ${n}`);
  assert.deepEqual(
    schemaFields(searchQuerySchema)
      .map((f) => fieldName(f.path))
      .sort(),
    ['cursor', 'healthy', 'includeRetired', 'inputMode', 'limit', 'outputMode', 'q', 'skill', 'tag', 'visibility'],
  );
  assert.ok(heartbeatFields.length >= 3 && updateFields.length > 40);
});

let n = 0;
test('POST /v1/agents: each hostile value class in each field is refused naming the field, with no row and no topic', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...registerFields).chain((f) => fc.tuple(fc.constant(f), hostileFor(f))),
      async ([f, h]) => {
        const id = `fz-post-${++n}`;
        const body = bodyWith({ id, card: FULL_CARD, channel: CHANNEL, visibility: 'tenant' }, f, h);
        const a = await post('/v1/agents', body, KEYS.acme, h);
        expectAnswer(a, f, h);
        if (a.status >= 400)
          assert.deepEqual(await sideEffects(id), { row: false, topic: false, version: null }, 'nothing stored or created');
      },
    ),
    { numRuns: runs(2000) },
  );
});

test('PUT /v1/agents/{id}: each hostile value class in each field is refused naming the field; a refused update changes nothing', async () => {
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...updateFields).chain((f) => fc.tuple(fc.constant(f), hostileFor(f))),
      async ([f, h]) => {
        // Growing partitions is part of the refused change: its topic must not grow either.
        const before = stream.topics.get('fz-put');
        const a = await put('/v1/agents/fz-put', bodyWith({ card: FULL_CARD, channel: { ...CHANNEL, partitions: 64 } }, f, h), h);
        expectAnswer(a, f, h);
        if (a.status < 400) accepted++;
        else assert.equal(stream.topics.get('fz-put'), before, 'no topic grown for a refused update');
      },
    ),
    { numRuns: runs(2000) },
  );
  assert.equal((await sideEffects('fz-put')).version, 1 + accepted, 'one version per accepted update, none for refused ones');
});

test('POST /v1/agents/{id}/heartbeat: each hostile value class in each field is refused naming the field', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...heartbeatFields).chain((f) => fc.tuple(fc.constant(f), hostileFor(f))),
      async ([f, h]) =>
        expectAnswer(await post('/v1/agents/fz-put/heartbeat', bodyWith({ ttlMs: 5000, workerId: 'w' }, f, h), KEYS.acme, h), f, h),
    ),
    { numRuns: runs(2000) },
  );
});

/** Query strings can carry any code point but a lone surrogate (no UTF-8 for it). */
const queryControls = controlStrings.filter((s) => !/[\ud800-\udfff]/.test(s));
const tsqueryHostile = fc.constantFrom(
  '-'.repeat(40),
  '- '.repeat(40),
  '-('.repeat(40),
  '!'.repeat(60),
  '"'.repeat(41),
  'or '.repeat(150),
  '-"a" '.repeat(80),
  '(((((',
  '&|!<->:*',
);
const queryParams = [...schemaFields(searchQuerySchema).map((f) => fieldName(f.path)), 'colour'];

test('GET /v1/agents: each hostile value class in each query parameter gets no 5xx; controls, huge and repeated values are refused naming it', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...queryParams),
      fc.oneof(
        queryControls.map((v) => ({ cls: 'control', v: [v] })),
        // Over 10 KiB, under node's 16 KiB request-line limit (which answers 431 before any route).
        fc.integer({ min: 10 * 1024 + 1, max: 12 * 1024 }).map((k) => ({ cls: 'huge', v: ['x'.repeat(k)] })),
        fc.tuple(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 })).map((v) => ({ cls: 'repeated', v })),
        numericText.map((v) => ({ cls: 'other', v: [v] })),
        tsqueryHostile.map((v) => ({ cls: 'other', v: [v] })),
        fc.string({ maxLength: 60 }).map((v) => ({ cls: 'other', v: [v] })),
      ),
      async (param, { cls, v }) => {
        const qs = v.map((x) => `${param}=${encodeURIComponent(x)}`).join('&');
        const a = await send(`/v1/agents?${qs}`, 'GET', as(KEYS.acme));
        if (cls === 'other' && param !== 'colour') {
          const p = check(a);
          if (p)
            assert.ok(
              (p.errors ?? []).some((e) => e.field === param),
              `names ${param}: ${a.body.slice(0, 200)}`,
            );
        } else refusedNaming(a, param);
      },
    ),
    { numRuns: runs(2000) },
  );
});

/**
 * A valid value of each search parameter, from the schema: every option of an enum, limits in
 * range, texts the fixed agents match and printable ones that may match nothing. The cursor comes
 * from the answer itself (below).
 */
function validQueryValue(f: SchemaField): fc.Arbitrary<string> {
  const name = fieldName(f.path);
  if (f.kind === 'enum') return fc.constantFrom(...f.options!);
  if (name === 'limit') return fc.integer({ min: 1, max: 100 }).map(String);
  const printableText = fc
    .string({ minLength: 1, maxLength: 40, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789-_./"*()!:'.split('')) })
    .filter((v) => v.trim() !== '');
  if (name === 'q') return fc.oneof(fc.constantFrom('refund', 'Fuzz Full', 'refund order', '"issues a refund"', '-refund'), printableText);
  return fc.oneof(fc.constantFrom('refund', 'billing', 'text/plain', 'application/json'), printableText);
}
const validQuery = fc.record(
  Object.fromEntries(
    schemaFields(searchQuerySchema)
      .filter((f) => fieldName(f.path) !== 'cursor')
      .map((f) => [fieldName(f.path), validQueryValue(f)]),
  ),
  { requiredKeys: [] },
);

interface ListedAgent {
  id: string;
  tenant: string;
  visibility: string;
  retired: boolean;
  healthy: boolean;
}

test('GET /v1/agents: every valid query the schema allows is answered 200 with only what the caller may see, and its cursor too', async () => {
  // Each enum option at least once, then generated combinations.
  const everyOption = schemaFields(searchQuerySchema)
    .filter((f) => f.kind === 'enum')
    .flatMap((f) => f.options!.map((o) => ({ [fieldName(f.path)]: o })));
  const viewers = [
    { key: KEYS.acme, tenant: 'acme' },
    { key: KEYS.globex, tenant: 'globex' },
  ];
  const checkQuery = async (query: Record<string, string>, viewer: { key: string; tenant: string }) => {
    let qs = new URLSearchParams(query).toString();
    for (let page = 0; page < 3; page++) {
      const a = await send(`/v1/agents?${qs}`, 'GET', as(viewer.key));
      assert.equal(a.status, 200, `${qs} as ${viewer.tenant}: ${a.status} ${a.body.slice(0, 300)}`);
      const { items, nextCursor } = JSON.parse(a.body) as { items: ListedAgent[]; nextCursor: string | null };
      for (const it of items) {
        const own = it.tenant === viewer.tenant;
        const visible =
          query.visibility === 'private'
            ? own && it.visibility === 'private'
            : query.visibility === 'tenant'
              ? own && it.visibility === 'tenant'
              : query.visibility === 'public'
                ? it.visibility === 'public'
                : it.visibility === 'public' || (own && it.visibility === 'tenant');
        assert.ok(visible, `${qs} as ${viewer.tenant} listed ${it.tenant}/${it.id} (${it.visibility})`);
        if (query.includeRetired !== 'true') assert.equal(it.retired, false, `${qs}: retired ${it.id} listed`);
        if (query.healthy !== undefined) assert.equal(String(it.healthy), query.healthy, `${qs}: ${it.id} healthy ${it.healthy}`);
      }
      if (!nextCursor) break;
      qs = new URLSearchParams({ ...query, cursor: nextCursor }).toString();
    }
  };
  for (const query of everyOption) for (const viewer of viewers) await checkQuery(query, viewer);
  await fc.assert(
    fc.asyncProperty(validQuery, fc.constantFrom(...viewers), async (query, viewer) => checkQuery(query as Record<string, string>, viewer)),
    { numRuns: runs(500) },
  );
});

test('GET /v1/agents?cursor=: decoded cursors are validated (rank range, id shape), never a 5xx', async () => {
  const cursorValue = fc.oneof(
    fc.record({
      // 1e-50 and 5e-324 underflow a Postgres real.
      r: fc.oneof(numericExtremes, fc.constantFrom(1e39, -1e39, 1e-50, 5e-324, 1e-46, 'NaN'), anyJson),
      id: fc.oneof(fc.string({ maxLength: 20 }), queryControls, wrongTypeFor('string')),
    }),
    fc.record({ id: fc.oneof(queryControls, fc.string({ minLength: 64, maxLength: 300 }), fc.string({ maxLength: 20 })) }),
    anyJson,
  );
  await fc.assert(
    fc.asyncProperty(cursorValue, fc.boolean(), async (c, ranked) => {
      const cursor = Buffer.from(JSON.stringify(c) ?? 'null').toString('base64url');
      const a = await send(`/v1/agents?cursor=${cursor}${ranked ? '&q=refund' : ''}`, 'GET', as(KEYS.acme));
      const p = check(a);
      if (p)
        assert.ok(
          (p.errors ?? []).some((e) => e.field === 'cursor'),
          a.body.slice(0, 200),
        );
    }),
    { numRuns: runs(2000) },
  );
});

const hostileId = fc.oneof(
  queryControls.map((s) => encodeURIComponent(s)),
  fc.constantFrom('%00', 'UPPER', 'a'.repeat(300), '..%2Fx', '%ED%A0%80', 'nobody', 'fz-acme-private', 'fz-globex-public'),
  fc.integer({ min: 10 * 1024 + 1, max: 12 * 1024 }).map((k) => 'x'.repeat(k)),
);
const versionText = fc.oneof(
  numericText,
  fc.integer().map(String),
  fc.constantFrom('0', '1', '2', '2147483647', '01', '１'),
  // Not "." or "..": dot segments (also as %2E) are resolved away by URL parsing before any server
  // sees them (`/versions/.` is `/versions/`), so they never reach the version route.
  fc
    .string({ minLength: 1, maxLength: 12 })
    .filter((s) => s !== '.' && s !== '..')
    .map((s) => encodeURIComponent(s)),
);

test('path parameters: hostile ids are 404, version numbers outside 1..2^31-1 are 400 naming version', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.tuple(hostileId, fc.constantFrom('GET', 'PUT', 'DELETE', 'GET card', 'GET versions', 'POST heartbeat')),
        versionText.map((v) => [v, 'version'] as const),
      ),
      fc.constantFrom(KEYS.acme, KEYS.globex),
      async ([x, route], key) => {
        if (route === 'version') {
          const a = await send(`/v1/agents/fz-put/versions/${x}`, 'GET', as(key));
          const valid = /^[0-9]{1,10}$/.test(decodeURIComponent(x)) && Number(x) >= 1 && Number(x) <= 2147483647;
          if (valid) assert.ok([200, 404].includes(a.status) && (check(a), true), a.body.slice(0, 200));
          else refusedNaming(a, 'version');
          return;
        }
        const [method, sub] = route.split(' ');
        const a = await send(`/v1/agents/${x}${sub ? `/${sub}` : ''}`, method, as(key), method === 'GET' ? undefined : Buffer.from('{}'));
        check(a);
        // Not an agent id: 404 like an unknown one (400 when the path does not even decode).
        if (!x.startsWith('fz-')) assert.ok([400, 404].includes(a.status), `${route} ${x.slice(0, 40)}: ${a.status}`);
      },
    ),
    { numRuns: runs(2000) },
  );
});

/** Wrong types anywhere, garbage bodies, odd headers: the older whole-request property, kept. */
const authorization = fc.constantFrom<string | string[] | undefined>(
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
  'text/plain',
  'application/json; charset=utf-16',
  'application/x-www-form-urlencoded',
  undefined,
);
const contentEncoding = fc.constantFrom<string | undefined>(undefined, 'gzip', 'br', 'deflate', 'identity, gzip');

test('any route, any body: garbage and content encodings, duplicate auth headers, wrong content types get documented problems', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(
        'POST /v1/agents',
        'PUT /v1/agents/fz-put',
        'POST /v1/agents/fz-put/heartbeat',
        'DELETE /v1/agents/nobody',
        'PATCH /v1/agents',
        'GET /.well-known/jwks.json',
      ),
      authorization,
      contentType,
      contentEncoding,
      fc
        .oneof(
          brokenBody,
          anyJson.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
          fc.constant(Buffer.from(JSON.stringify({ card: card('x'.repeat(70 * 1024)) }))),
        )
        .map(printable),
      async (route, auth, ct, ce, body) => {
        const [method, path] = route.split(' ');
        const h: OutgoingHttpHeaders = {};
        if (ct) h['content-type'] = ct;
        if (ce) h['content-encoding'] = ce;
        if (auth) h['authorization'] = auth as string; // node:http sends an array as repeated headers
        check(await send(path, method, h, method === 'GET' ? undefined : body));
      },
    ),
    { numRuns: runs(2000) },
  );
});

test('after the fuzzing the fixed agents are unchanged for their owners and the heap is back near the baseline', async () => {
  const globex = await send('/v1/agents/fz-globex-public', 'GET', as(KEYS.globex));
  assert.equal(globex.status, 200);
  assert.equal((JSON.parse(globex.body) as { version: number }).version, 1, 'no other tenant changed it');
  await heapBackNear(baseline);
});
