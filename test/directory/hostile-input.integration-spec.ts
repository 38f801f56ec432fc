import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import type { OutgoingHttpHeaders } from 'node:http';
import { logLevel } from 'kafkajs';
import { createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { eventually, sql, testRun } from '../support/infra.js';
import { holdBody, rawRequest } from '../support/raw-http.js';
import { sendRaw } from '../fuzz/fuzz-support.js';
import { card, client, KEYS, startTestDirectory, type Reply } from './directory-fixtures.js';

// Hostile input and cross-tenant history at the directory's edge, each a reproduction that once got
// a 500 or a leak, against the real Kafka card stream, so "no orphan topic" is checked on the broker.

const { dir, prefix, databaseUrl } = await startTestDirectory('hostile-input');
const api = client(dir.url);
const admin = createKafka({ brokers: testRun().brokers, clientId: 'hostile-input-test' }, { logLevel: logLevel.NOTHING }).admin();
await admin.connect();
after(() => admin.disconnect());
const myTopics = async () => (await admin.listTopics()).filter((t) => t.startsWith(prefix)).sort();

function names(r: Reply, field: string): void {
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.code, 'VALIDATION_FAILED');
  assert.ok(
    (r.body.errors as Array<{ field: string }>).some((e) => e.field === field),
    `names ${field}: ${JSON.stringify(r.body.errors)}`,
  );
}

assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'hi-agent', card: card('Hi Agent') })).status, 201);

test('NUL or a lone surrogate in card fields on POST is 400 naming the field, and creates no topic and no row', async () => {
  await eventually('the fixture topics exist', async () => (await myTopics()).length >= 3);
  const before = await myTopics();
  const cases: Array<[string, Record<string, unknown>]> = [
    ['card.name', card('Nul\u0000Name')],
    ['card.description', card('Surrogate', { description: 'half \ud800 a pair' })],
    ['card.skills[0].tags[0]', card('Tag', { skills: [{ id: 's', name: 'S', description: 'd', tags: ['a\u0000'] }] })],
    ['card.defaultInputModes[0]', card('Mode', { defaultInputModes: ['text/\udfffplain'] })],
  ];
  for (const [field, c] of cases) {
    const id = `hi-refused-${field.replace(/[^a-z]/g, '')}`;
    names(await api(KEYS.acme, 'POST', '/v1/agents', { id, card: c }), field);
    assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', [id]), [], 'no row');
  }
  assert.deepEqual(await myTopics(), before, 'no orphan command topic');
});

test('NUL or a lone surrogate in card fields on PUT is 400 naming the field; the version and the topic stay', async () => {
  const meta = async () =>
    (await admin.fetchTopicMetadata({ topics: [new TopicNames(prefix).commands('hi-agent')] })).topics[0].partitions.length;
  const partitions = await meta();
  names(await api(KEYS.acme, 'PUT', '/v1/agents/hi-agent', { card: card('Hi\u0000'), channel: { partitions: 9 } }), 'card.name');
  names(
    await api(KEYS.acme, 'PUT', '/v1/agents/hi-agent', { card: card('Hi', { version: '\ud800' }), channel: { partitions: 9 } }),
    'card.version',
  );
  assert.equal(await meta(), partitions, 'the command topic did not grow');
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/hi-agent')).body.version, 1);
});

test('search input: q of 40 dashes is an empty result, NUL in q, tag, skill, inputMode is 400 naming it', async () => {
  for (const q of ['-'.repeat(40), '- '.repeat(40), '-('.repeat(40)]) {
    const r = await api(KEYS.acme, 'GET', `/v1/agents?q=${encodeURIComponent(q)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.items, []);
  }
  const found = await api(KEYS.acme, 'GET', `/v1/agents?q=${encodeURIComponent('--refunds -- or ((invoices')}`);
  assert.equal(found.status, 200);
  assert.ok(
    found.body.items.some((a: { id: string }) => a.id === 'hi-agent'),
    'operators around words still search the words',
  );
  for (const p of ['q', 'tag', 'skill', 'inputMode', 'outputMode']) names(await api(KEYS.acme, 'GET', `/v1/agents?${p}=a%00b`), p);
  names(await api(KEYS.acme, 'GET', '/v1/agents?tag=%1B%5B2J'), 'tag');
});

test('integer bounds and cursors: /versions/2147483648, limit=1e3 and a cursor holding 1e39 are 400 naming the field', async () => {
  names(await api(KEYS.acme, 'GET', '/v1/agents/hi-agent/versions/2147483648'), 'version');
  names(await api(KEYS.acme, 'GET', '/v1/agents/hi-agent/versions/0'), 'version');
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/hi-agent/versions/2147483647')).status, 404);
  names(await api(KEYS.acme, 'GET', '/v1/agents?limit=1e3'), 'limit');
  const cursor = (c: unknown) => Buffer.from(JSON.stringify(c)).toString('base64url');
  names(await api(KEYS.acme, 'GET', `/v1/agents?q=refund&cursor=${cursor({ r: 1e39, id: 'x' })}`), 'cursor');
  names(await api(KEYS.acme, 'GET', `/v1/agents?cursor=${cursor({ id: 'a\u0000' })}`), 'cursor');
});

test('version history across tenants: per-version visibility for list and get, createdBy only for the owner', async () => {
  // v1 tenant, v2 private, v3 public: globex may see v3 only, and never who wrote it.
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'hi-history', card: card('Hi History') })).status, 201);
  assert.equal((await api(KEYS.acme, 'PUT', '/v1/agents/hi-history', { card: card('Hi History'), visibility: 'private' })).status, 200);
  assert.equal((await api(KEYS.acme, 'PUT', '/v1/agents/hi-history', { card: card('Hi History'), visibility: 'public' })).status, 200);
  const matrix: Array<[string, number, number]> = [
    // viewer, version, expected status
    [KEYS.acme, 1, 200],
    [KEYS.acme, 2, 200],
    [KEYS.acme, 3, 200],
    [KEYS.globex, 1, 404],
    [KEYS.globex, 2, 404],
    [KEYS.globex, 3, 200],
  ];
  for (const [key, v, status] of matrix) {
    const r = await api(key, 'GET', `/v1/agents/hi-history/versions/${v}`);
    assert.equal(r.status, status, `${key} v${v}`);
    if (status === 200) assert.equal('createdBy' in r.body, key === KEYS.acme, `${key} v${v} createdBy`);
  }
  const own = await api(KEYS.acme, 'GET', '/v1/agents/hi-history/versions');
  assert.deepEqual(
    own.body.items.map((v: { version: number }) => v.version),
    [3, 2, 1],
  );
  assert.ok(own.body.items.every((v: { createdBy?: string }) => v.createdBy === 'alice'));
  const other = await api(KEYS.globex, 'GET', '/v1/agents/hi-history/versions');
  assert.deepEqual(
    other.body.items.map((v: { version: number; visibility: string }) => [v.version, v.visibility]),
    [[3, 'public']],
  );
  assert.ok(other.body.items.every((v: Record<string, unknown>) => !('createdBy' in v) && !('channel' in v)));
  // Other views: no subject, channel or command topic of another tenant's agent.
  const seen = await api(KEYS.globex, 'GET', '/v1/agents/hi-history');
  const listed = (await api(KEYS.globex, 'GET', '/v1/agents?q=history')).body.items.find((a: { id: string }) => a.id === 'hi-history');
  for (const view of [seen.body, listed])
    for (const k of ['registeredBy', 'createdBy', 'channel', 'commandTopic']) assert.ok(!(k in view), k);
  // Back to tenant-only: the public version stays readable only while the agent is visible.
  assert.equal((await api(KEYS.acme, 'PUT', '/v1/agents/hi-history', { card: card('Hi History'), visibility: 'tenant' })).status, 200);
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/hi-history/versions/3')).status, 404);
  assert.equal((await api(KEYS.globex, 'GET', '/v1/agents/hi-history/versions')).status, 404);
});

test('a body that is not UTF-8 is 400 (not valid JSON) and registers nothing', async () => {
  const before = await myTopics();
  const json = JSON.stringify({ id: 'hi-bytes', card: card('Bytes BAD') });
  const [head, tail] = json.split('BAD');
  // The UTF-8 form of a lone surrogate: no UTF-8 decoder may accept it (it used to become U+FFFD).
  const body = Buffer.concat([Buffer.from(head!), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(tail!)]);
  const r = await rawRequest(`${dir.url}/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.acme}`, 'content-type': 'application/json' },
    body,
  });
  assert.equal(r.status, 400, r.body);
  assert.equal((JSON.parse(r.body) as { code: string }).code, 'VALIDATION_FAILED');
  assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', ['hi-bytes']), [], 'no row');
  assert.deepEqual(await myTopics(), before, 'no topic');
});

// Second round of outside probing: inputs the first round did not try.

/** A raw request (repeated headers, undecodable bytes), answered as a {@link Reply}-like status and parsed body. */
const rawApi = async (path: string, init: { method?: string; headers: OutgoingHttpHeaders; body?: Buffer }) => {
  const a = await sendRaw(dir.url, path, init.method ?? 'POST', init.headers, init.body);
  return { status: a.status, headers: new Headers(), body: a.body ? JSON.parse(a.body) : undefined } as Reply;
};

test('a ranked cursor whose rank underflows a Postgres real (1e-50, 5e-324) is 400 naming cursor, not a 500', async () => {
  const cursor = (c: unknown) => Buffer.from(JSON.stringify(c)).toString('base64url');
  for (const r of [1e-50, 5e-324])
    names(await api(KEYS.acme, 'GET', `/v1/agents?q=refund&cursor=${cursor({ r, id: 'hi-agent' })}`), 'cursor');
  // The smallest float4 (a denormal) and zero are still ranks Postgres can compare with.
  for (const r of [1.401298464324817e-45, 0])
    assert.equal((await api(KEYS.acme, 'GET', `/v1/agents?q=refund&cursor=${cursor({ r, id: 'hi-agent' })}`)).status, 200);
});

test('security schemes and requirements are checked against the A2A 1.0 shapes, not coerced ("[object Object]")', async () => {
  const scheme = (s: unknown) => card('Hi Sec', { securitySchemes: { key: s } });
  const refused: Array<[string, Record<string, unknown>]> = [
    ['card.securitySchemes.key', scheme({ bogus: 1 })],
    ['card.securitySchemes.key', scheme({ apiKeySecurityScheme: { location: 'header', name: 'k' }, mtlsSecurityScheme: {} })],
    ['card.securitySchemes.key.apiKeySecurityScheme', scheme({ apiKeySecurityScheme: 7 })],
    ['card.securitySchemes.key.apiKeySecurityScheme.location', scheme({ apiKeySecurityScheme: { location: 7, name: 'k' } })],
    ['card.securitySchemes.key.httpAuthSecurityScheme.scheme', scheme({ httpAuthSecurityScheme: { scheme: {} } })],
    ['card.securitySchemes.key.oauth2SecurityScheme.flows', scheme({ oauth2SecurityScheme: { flows: 'x' } })],
    [
      'card.securitySchemes.key.openIdConnectSecurityScheme.openIdConnectUrl',
      scheme({ openIdConnectSecurityScheme: { openIdConnectUrl: 'javascript:alert(1)' } }),
    ],
    ['card.securityRequirements[0].schemes', card('Hi Sec', { securityRequirements: [{ schemes: 5 }] })],
    [
      'card.securityRequirements[0].schemes.key.list[0]',
      card('Hi Sec', {
        securitySchemes: { key: { mtlsSecurityScheme: {} } },
        securityRequirements: [{ schemes: { key: { list: [{}] } } }],
      }),
    ],
    [
      'card.skills[0].securityRequirements[0].schemes',
      card('Hi Sec', { skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'], securityRequirements: [{ schemes: 5 }] }] }),
    ],
    ['card.securityRequirements[0].schemes.nope', card('Hi Sec', { securityRequirements: [{ schemes: { nope: { list: [] } } }] })],
  ];
  for (const [field, c] of refused) {
    names(await api(KEYS.acme, 'POST', '/v1/agents', { id: 'hi-sec', card: c }), field);
    assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', ['hi-sec']), [], 'no row');
  }
  const good = card('Hi Sec', {
    securitySchemes: {
      key: { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } },
      oauth: {
        oauth2SecurityScheme: {
          flows: { clientCredentials: { tokenUrl: 'https://idp.example.com/token', scopes: { 'refunds:write': 'issue refunds' } } },
        },
      },
    },
    securityRequirements: [{ schemes: { key: { list: [] } } }, { schemes: { oauth: { list: ['refunds:write'] } } }],
  });
  const ok = await api(KEYS.acme, 'POST', '/v1/agents', { id: 'hi-sec', card: good });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.deepEqual(ok.body.card.securitySchemes.key, { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } });
});

test('single-line card fields refuse TAB, CR and LF; URLs are strict (no whitespace, "http(s)://", no credentials)', async () => {
  const refused: Array<[string, Record<string, unknown>]> = [
    ['card.iconUrl', card('Hi Line', { iconUrl: 'https://x.example/\r\nSet-Cookie: a=b' })],
    ['card.documentationUrl', card('Hi Line', { documentationUrl: 'https://x.exa\tmple/' })],
    ['card.iconUrl', card('Hi Line', { iconUrl: ' https://x.example' })],
    ['card.iconUrl', card('Hi Line', { iconUrl: 'https:x.example' })],
    ['card.provider.url', card('Hi Line', { provider: { url: 'https://user:secret@x.example', organization: 'X' } })],
    [
      'card.supportedInterfaces[0].url',
      card('Hi Line', { supportedInterfaces: [{ url: 'https://a.example/\n', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] }),
    ],
    ['card.name', card('Hi\nLine')],
    ['card.version', card('Hi Line', { version: '1.0\r\n' })],
    ['card.defaultInputModes[0]', card('Hi Line', { defaultInputModes: ['text/plain\r\nX-Injected: y'] })],
    ['card.skills[0].id', card('Hi Line', { skills: [{ id: 's\n', name: 'S', description: 'd', tags: ['t'] }] })],
    ['card.skills[0].tags[0]', card('Hi Line', { skills: [{ id: 's', name: 'S', description: 'd', tags: ['t\t'] }] })],
  ];
  for (const [field, c] of refused) names(await api(KEYS.acme, 'POST', '/v1/agents', { id: 'hi-line', card: c }), field);
  names(await api(KEYS.acme, 'POST', '/v1/agents/hi-agent/heartbeat', { workerId: 'w\r\n1' }), 'workerId');
  // Free text keeps its line breaks.
  const ok = await api(KEYS.acme, 'POST', '/v1/agents', {
    id: 'hi-line',
    card: card('Hi Line', { description: 'first line\nsecond\tline', iconUrl: 'https://x.example/icon.png' }),
  });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
});

test('undecodable bodies and paths are 400 naming body or path: garbage gzip/deflate/br, invalid UTF-8 bytes, %ff in a path', async () => {
  const json = { authorization: `Bearer ${KEYS.acme}`, 'content-type': 'application/json' };
  for (const enc of ['gzip', 'deflate', 'br']) {
    const r = await rawApi('/v1/agents', { headers: { ...json, 'content-encoding': enc }, body: Buffer.from('garbage!!') });
    names(r, 'body');
  }
  // Even a well-formed compressed body: the directory takes none (a few bytes could decode to the limit).
  const gzipped = await rawApi('/v1/agents', {
    headers: { ...json, 'content-encoding': 'gzip' },
    body: gzipSync(JSON.stringify({ id: 'hi-gzip', card: card('Hi Gzip') })),
  });
  names(gzipped, 'body');
  assert.match(JSON.stringify(gzipped.body), /content encoding unsupported/);
  const valid = JSON.stringify({ id: 'hi-utf8', card: card('Hi Utf8', { description: 'a_b' }) });
  const [before, after] = valid.split('_');
  const r = await rawApi('/v1/agents', {
    headers: json,
    body: Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xed, 0xa0, 0x80]), Buffer.from(after)]),
  });
  names(r, 'body');
  assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', ['hi-utf8']), [], 'no row');
  for (const p of ['/v1/agents/%ff', '/v1/agents/%ED%A0%80', '/v1/agents/hi-agent/versions/%zz'])
    names(await rawApi(p, { method: 'GET', headers: json }), 'path');
});

test('a repeated Authorization header is refused, never resolved to one of the tenants', async () => {
  const r = await rawApi('/v1/agents', {
    // node:http sends an array as repeated headers.
    headers: { authorization: [`Bearer ${KEYS.globex}`, `Bearer ${KEYS.acme}`] as unknown as string, 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify({ id: 'hi-dup-auth', card: card('Hi Dup Auth') })),
  });
  assert.equal(r.status, 401, JSON.stringify(r.body));
  assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', ['hi-dup-auth']), [], 'no row');
});

test('a body without a valid credential is answered 401 before it is read, and its connection closed', async () => {
  // Headers only, announcing 900 KB: a directory that read bodies before authenticating would
  // wait for the body (and buffer it) instead of answering.
  const headersOnly = { contentLength: 900_000, sendBytes: 0 };
  const cases: Array<[string, string, Record<string, string>]> = [
    ['POST', '/v1/agents', {}],
    ['POST', '/v1/agents', { authorization: 'Bearer not-a-key-at-all' }],
    ['PUT', '/v1/agents/hi-agent', { authorization: 'Basic ZGVtbzphY21l' }],
    ['POST', '/v1/agents/hi-agent/heartbeat', {}],
    // Whatever the route (no route of the directory takes a stranger's body).
    ['POST', '/healthz', {}],
    ['POST', '/no-such-route', {}],
  ];
  for (const [method, path, headers] of cases) {
    assert.deepEqual(
      await holdBody(dir.url, path, headers, { ...headersOnly, method }),
      { status: 401, closed: true },
      `${method} ${path}`,
    );
  }
  const twice = await rawRequest(`${dir.url}/v1/agents`, {
    method: 'POST',
    headers: {
      authorization: [`Bearer ${KEYS.acme}`, `Bearer ${KEYS.acme}`] as unknown as string,
      'content-type': 'application/json',
      'content-length': '900000',
    },
    timeoutMs: 3000,
  }).catch((e: Error) => e);
  assert.ok(!(twice instanceof Error) && twice.status === 401, `a repeated Authorization header: ${String(twice)}`);
  // Many at once: each is answered at once, none waits for its body.
  const many = await Promise.all(Array.from({ length: 100 }, () => holdBody(dir.url, '/v1/agents', {}, headersOnly)));
  assert.deepEqual(new Set(many.map((r) => r?.status)), new Set([401]));
  // The refusal is the directory's problem body, as from the routes.
  const refused = await rawRequest(`${dir.url}/v1/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'hi-stranger', card: card('Hi Stranger') }),
  });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['www-authenticate'], 'Bearer');
  assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
  assert.equal((JSON.parse(refused.body) as { code: string }).code, 'UNAUTHENTICATED');
  // Marked as the routes' answers are: it depends on the credential, no shared cache keeps it.
  assert.equal(refused.headers['cache-control'], 'private, no-cache');
  assert.match(String(refused.headers.vary), /\bAuthorization\b/);
  assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', ['hi-stranger']), [], 'no row');
});

test('an authenticated body is read as before; public routes stay public', async () => {
  // Held back, an authenticated caller's body is awaited: no answer yet...
  assert.equal(
    await holdBody(dir.url, '/v1/agents', { authorization: `Bearer ${KEYS.acme}` }, { contentLength: 60_000, sendBytes: 0, waitMs: 500 }),
    undefined,
  );
  // ...unless its declared length is over the limit: refused at once, never read, connection closed.
  assert.deepEqual(
    await holdBody(dir.url, '/v1/agents', { authorization: `Bearer ${KEYS.acme}` }, { contentLength: 2 ** 40, sendBytes: 0, waitMs: 2000 }),
    { status: 400, closed: true },
  );
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'hi-authed', card: card('Hi Authed') })).status, 201);
  const big = await api(KEYS.acme, 'POST', '/v1/agents', { card: card('Hi Big', { description: 'x'.repeat(70 * 1024) }) });
  assert.equal(big.body.code, 'BODY_TOO_LARGE', 'the body limit still applies');
  for (const path of ['/healthz', '/livez', '/.well-known/jwks.json', '/metrics']) {
    assert.equal((await rawRequest(`${dir.url}${path}`)).status, 200, path);
  }
});

test('a "__proto__" key anywhere in a card is 400 naming it, not silently dropped', async () => {
  const base = JSON.stringify(card('Hi Proto')).slice(0, -1);
  const cases: Array<[string, string]> = [
    ['card.securitySchemes.__proto__', `"securitySchemes":{"__proto__":{"mtlsSecurityScheme":{}}}`],
    ['card.securityRequirements[0].schemes.__proto__', `"securityRequirements":[{"schemes":{"__proto__":{"list":[]}}}]`],
    ['card.capabilities.extensions[0].params.__proto__', `"capabilities":{"extensions":[{"uri":"u","params":{"__proto__":{"a":1}}}]}`],
  ];
  for (const [field, extra] of cases) {
    names(await api(KEYS.acme, 'POST', '/v1/agents', undefined, `{"id":"hi-proto","card":${base},${extra}}}`), field);
    assert.deepEqual(await sql(databaseUrl, 'SELECT id FROM directory.agent WHERE id = $1', ['hi-proto']), [], 'no row');
  }
});
