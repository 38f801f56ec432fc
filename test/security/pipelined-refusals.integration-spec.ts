import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { InMemoryCardStream } from '@mesh/app-directory';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { eventually, sql } from '../support/infra.js';

// Two requests pipelined on one connection, the first refused with `Connection: close`: the
// second (valid, authenticated, with a side effect) must not run, since it can never be answered.
// The rule is libs/service's serveInOrder, first middleware of every service.
// Each case then sends the second request alone, to show it is one the service would have run.

/** An HTTP/1.1 request as raw text (Content-Length from the body). */
function rawHttp(method: string, path: string, headers: Record<string, string>, body: string): string {
  const all = { host: 'localhost', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers };
  const head = Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `${method} ${path} HTTP/1.1\r\n${head}\r\n${body}`;
}

/** Writes `requests` in one write on one connection; resolves with what came back once the server closed it. */
function pipelined(url: string, requests: string[]): Promise<{ answer: string; statuses: number[] }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname === 'localhost' ? '127.0.0.1' : hostname);
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection; it sent: ${answer.slice(0, 400)}`));
    }, 10_000);
    socket.on('error', () => undefined);
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer, statuses: [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])) });
    });
    socket.write(requests.join(''));
  });
}

/** Long enough for a request that did run behind the refusal to have stored what it stores. */
const SETTLE_MS = 1500;

const disp = await startTestDispatcher('sec-pipelined');
await publishAgents(disp.kafka, disp.topics, [agentRecord('echo')]);
await eventually('echo served', async () => (await fetch(`${disp.url}/a2a/echo/.well-known/agent-card.json`)).ok);
const { dir } = await startTestDirectory('sec-pipelined', {}, { cardStream: new InMemoryCardStream() });

const a2aHeaders = { 'a2a-version': '1.0' };
const sendMessage = (messageId: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 2,
    method: 'SendMessage',
    params: { message: jsonMessage('pipelined', { messageId }), configuration: { returnImmediately: true } },
  });
const stored = async (messageId: string) =>
  (
    await sql<{ n: number }>(disp.databaseUrl, 'SELECT count(*)::int AS n FROM dispatcher.message_dedup WHERE message_id = $1', [messageId])
  )[0].n;

test('dispatcher: a SendMessage pipelined behind a refused request is not run', async () => {
  const refusals = {
    'no credential': rawHttp('POST', '/a2a/echo', a2aHeaders, '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}'),
    'a wrong key': rawHttp('POST', '/a2a/echo', { ...a2aHeaders, authorization: 'Bearer wrong-key' }, '{}'),
  };
  const ids: string[] = [];
  for (const [name, refused] of Object.entries(refusals)) {
    const messageId = `pipelined-${ids.length}-${Date.now()}`;
    ids.push(messageId);
    const valid = rawHttp('POST', '/a2a/echo', { ...a2aHeaders, authorization: 'Bearer demo-acme' }, sendMessage(messageId));
    const r = await pipelined(disp.url, [refused, valid]);
    assert.deepEqual(r.statuses, [401], `${name}: ${r.answer}`);
    assert.match(r.answer, /connection: close/i, name);
  }
  await sleep(SETTLE_MS);
  for (const messageId of ids) assert.equal(await stored(messageId), 0, `no dedup row for ${messageId}: the SendMessage never ran`);
  const tasks = await sql<{ n: number }>(disp.databaseUrl, 'SELECT count(*)::int AS n FROM dispatcher.tasks');
  assert.equal(tasks[0].n, 0, 'no task');

  // Alone, the same request is accepted and stored.
  const alone = await rawRequest(`${disp.url}/a2a/echo`, {
    method: 'POST',
    headers: { ...a2aHeaders, authorization: 'Bearer demo-acme', 'content-type': 'application/json' },
    body: sendMessage(ids[0]),
  });
  assert.equal(alone.status, 200, alone.body);
  assert.ok((JSON.parse(alone.body) as { result?: unknown }).result, alone.body);
  assert.equal(await stored(ids[0]), 1);
});

test('directory: a card registration pipelined behind a refused request is not run', async () => {
  const registration = (id: string) => JSON.stringify({ id, card: card(`Card ${id}`) });
  const refusals = {
    'no credential': rawHttp('POST', '/v1/agents', {}, registration('refused-card')),
    'a wrong key': rawHttp('POST', '/v1/agents', { authorization: 'Bearer wrong-key' }, '{}'),
  };
  const auth = { authorization: `Bearer ${KEYS.acme}` };
  const ids: string[] = [];
  for (const [name, refused] of Object.entries(refusals)) {
    const id = `pipelined-card-${ids.length}`;
    ids.push(id);
    const r = await pipelined(dir.url, [refused, rawHttp('POST', '/v1/agents', auth, registration(id))]);
    assert.deepEqual(r.statuses, [401], `${name}: ${r.answer}`);
    assert.match(r.answer, /connection: close/i, name);
  }
  await sleep(SETTLE_MS);
  for (const id of ids) {
    assert.equal((await rawRequest(`${dir.url}/v1/agents/${id}`, { headers: auth })).status, 404, `${id} was not registered`);
  }

  // Alone, the same registration is accepted.
  const alone = await rawRequest(`${dir.url}/v1/agents`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: registration(ids[0]),
  });
  assert.equal(alone.status, 201, alone.body);
  assert.equal((await rawRequest(`${dir.url}/v1/agents/${ids[0]}`, { headers: auth })).status, 200);
});
