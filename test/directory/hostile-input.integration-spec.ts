import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { logLevel } from 'kafkajs';
import { createKafka } from '@mesh/bus';
import { eventually, sql, testRun } from '../support/infra.js';
import { rawRequest } from '../support/raw-http.js';
import { card, client, KEYS, startTestDirectory, type Reply } from './directory-fixtures.js';

// Issue 17, findings 4 and 5 (directory): each reproduction from the report, against the real
// Kafka card stream, so "no orphan topic" is checked on the broker itself.

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
    (await admin.fetchTopicMetadata({ topics: [`${prefix}mesh.agent.hi-agent.commands`] })).topics[0].partitions.length;
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
