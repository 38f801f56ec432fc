import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { loadAuthOptions } from '@mesh/auth';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { pushBody } from '../support/raw-http.js';

// The edge's own admission: a byte budget of 16 KiB/s per tenant (bucket 256 KiB: refilled for a
// 200 KiB body only after 9 s, longer than any test here takes) charged before a
// body is read, and a tenant rate of 1 new task/s (burst 2) that JSON-RPC notifications never take.
const env = await startTestDispatcher(
  'edge-admission',
  {
    auth: loadAuthOptions({
      AUTH_API_KEYS:
        'demo-acme=acme:alice,demo-globex=globex:bob,demo-initech=initech:carol,demo-umbrella=umbrella:dan,demo-hooli=hooli:erin,demo-stark=stark:tony,demo-wayne=wayne:bruce,demo-oscorp=oscorp:norman',
    }),
  },
  {
    DISPATCHER_TENANT_BYTES_PER_S: '16kb',
    DISPATCHER_TENANT_BYTES_BURST: '256kb',
    DISPATCHER_TENANT_RATE_PER_S: '1',
    DISPATCHER_TENANT_BURST: '2',
  },
);
await publishAgents(env.kafka, env.topics, [agentRecord('edge')]);
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/edge/.well-known/agent-card.json`)).ok);

const HEADERS = { 'a2a-version': '1.0', 'content-type': 'application/json' };
const sendBody = (text: string) => JSON.stringify({ message: jsonMessage(text), configuration: { returnImmediately: true } });
const restSend = (token: string, body: string, headers: Record<string, string> = {}) =>
  rawRequest(`${env.url}/a2a/edge/message:send`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: `Bearer ${token}`, ...headers },
    body,
  });
const BIG = 'x'.repeat(200 * 1024);

interface RestError {
  error: { code: number; status: string; message: string; details: Array<{ reason: string; metadata: { retryAfterSeconds: string } }> };
}

test('a tenant over its byte budget is refused 429 TENANT_BYTES_EXCEEDED before its body is read; other tenants are not', async () => {
  assert.equal((await restSend('demo-acme', sendBody(BIG))).status, 200, 'the first 200 KiB fit the 256 KiB bucket');
  const refused = await restSend('demo-acme', sendBody(BIG));
  assert.equal(refused.status, 429, refused.body.slice(0, 300));
  const retryAfter = Number(refused.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 10, `Retry-After ${refused.headers['retry-after']}`);
  const body = JSON.parse(refused.body) as RestError;
  assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
  assert.equal(body.error.details[0]!.reason, 'TENANT_BYTES_EXCEEDED');
  assert.equal(body.error.details[0]!.metadata.retryAfterSeconds, String(retryAfter));
  assert.match(body.error.message, /tenant "acme" exceeded its request body budget of 16384 bytes\/s/);
  // Refused from the headers: a body that is not even JSON gets the same answer, not a parse error.
  const unparsed = await restSend('demo-acme', '{'.repeat(200 * 1024));
  assert.equal(unparsed.status, 429);
  assert.equal((JSON.parse(unparsed.body) as RestError).error.details[0]!.reason, 'TENANT_BYTES_EXCEEDED');
  // Another tenant's budget is its own.
  assert.equal((await restSend('demo-globex', sendBody(BIG))).status, 200);
  // JSON-RPC: the same refusal in its envelope (the RATE_LIMITED code; the id is unread: null).
  const rpc = await rawRequest(`${env.url}/a2a/edge`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: 'Bearer demo-acme' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: 'x', pad: BIG } }),
  });
  assert.equal(rpc.status, 429);
  assert.ok(Number(rpc.headers['retry-after']) >= 1);
  const rpcBody = JSON.parse(rpc.body) as { id: unknown; error: { code: number; data: Array<{ reason: string }> } };
  assert.equal(rpcBody.id, null);
  assert.equal(rpcBody.error.code, -32029);
  assert.equal(rpcBody.error.data[0]!.reason, 'TENANT_BYTES_EXCEEDED');
  const metrics = await (await fetch(`${env.url}/metrics`)).text();
  assert.match(metrics, /^mesh_admission_refusals_total\{tenant="acme",agent="edge",reason="TENANT_BYTES_EXCEEDED"\} 3$/m);
});

test('a body refused by the budget is not read: its connection closes, and the next request opens another', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const send = (path: string, method: string, body?: string) =>
      new Promise<{ status: number; reused: boolean; connection: string | undefined }>((resolve, reject) => {
        const req = httpRequest(
          `${env.url}${path}`,
          { method, agent, headers: { ...HEADERS, authorization: 'Bearer demo-hooli' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, connection: res.headers.connection }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    assert.equal((await send('/a2a/edge/message:send', 'POST', sendBody(BIG))).status, 200);
    const refused = await send('/a2a/edge/message:send', 'POST', sendBody(BIG));
    assert.equal(refused.status, 429);
    assert.ok(refused.reused);
    assert.equal(refused.connection, 'close', 'drained, an over-budget tenant would keep the dispatcher reading');
    const next = await send('/a2a/edge/tasks', 'GET');
    assert.equal(next.status, 200);
    assert.equal(next.reused, false, 'a new connection');
  } finally {
    agent.destroy();
  }
});

/** A chunked POST (no Content-Length). */
const chunkedSend = (token: string, body: string) =>
  rawRequest(`${env.url}/a2a/edge/message:send`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: `Bearer ${token}`, 'transfer-encoding': 'chunked' },
    body,
  });

test('a chunked body is charged the most it may be, and what it did not use is given back once read', async () => {
  // The bucket (256 KiB) is below the body limit (1 MiB): a chunked body takes the whole bucket...
  assert.equal((await chunkedSend('demo-initech', sendBody('small'))).status, 200);
  // ...and gets all but its own few bytes back, so a large send right after still fits.
  assert.equal((await restSend('demo-initech', sendBody(BIG))).status, 200);
  // Over the budget, a chunked body (here an endless one) is refused and its connection closed rather than read.
  const refused = await pushBody(
    env.url,
    '/a2a/edge/message:send',
    { ...HEADERS, authorization: 'Bearer demo-initech' },
    { chunked: true },
  );
  assert.equal(refused.status, 429, refused.answer.slice(0, 300));
  assert.match(refused.answer, /connection: close/i);
  assert.match(refused.answer, /TENANT_BYTES_EXCEEDED/);
  assert.ok(refused.closedByServer && refused.bodyBytesSent < 8 * 1024 * 1024, `closed after ${refused.bodyBytesSent} bytes`);
});

test('a chunked body larger than the bucket costs what was read: the tenant owes the rest and waits it out', async () => {
  // 600 KiB read against a 256 KiB bucket: 344 KiB owed at 16 KiB/s.
  assert.equal((await chunkedSend('demo-stark', sendBody('x'.repeat(600 * 1024)))).status, 200);
  const refused = await restSend('demo-stark', sendBody('small'));
  assert.equal(refused.status, 429, refused.body.slice(0, 300));
  const retryAfter = Number(refused.headers['retry-after']);
  assert.ok(retryAfter >= 20, `the debt is waited out: Retry-After ${retryAfter} s`);
});

test('a compressed body is charged what it decodes to, not its bytes on the wire', async () => {
  // 600 KiB of text gzips to about 1 KiB: charged 600 KiB against the 256 KiB bucket, 344 KiB owed.
  const gz = gzipSync(sendBody('x'.repeat(600 * 1024)));
  assert.ok(gz.length < 4096);
  const sent = await rawRequest(`${env.url}/a2a/edge/message:send`, {
    method: 'POST',
    headers: { ...HEADERS, authorization: 'Bearer demo-wayne', 'content-encoding': 'gzip' },
    body: gz,
  });
  assert.equal(sent.status, 200, sent.body.slice(0, 300));
  const refused = await restSend('demo-wayne', sendBody('small'));
  assert.equal(refused.status, 429, refused.body.slice(0, 300));
  assert.ok(Number(refused.headers['retry-after']) >= 20, `Retry-After ${refused.headers['retry-after']}`);
});

test('compressed bodies sent at once are each charged the most they may decode to, not their bytes on the wire', async () => {
  // Six 200 KiB bodies that gzip to about 1 KiB each, at once, against a 256 KiB bucket: charged
  // their wire size up front, all six would pass (1.2 MiB against 256 KiB).
  const gz = gzipSync(sendBody(BIG));
  assert.ok(gz.length < 4096);
  const answers = await Promise.all(
    Array.from({ length: 6 }, () =>
      rawRequest(`${env.url}/a2a/edge/message:send`, {
        method: 'POST',
        headers: { ...HEADERS, authorization: 'Bearer demo-oscorp', 'content-encoding': 'gzip' },
        body: gz,
      }),
    ),
  );
  // (The tenant rate, burst 2, would refuse some too: the byte budget refuses them first.)
  const overBudget = answers.filter((a) => a.status === 429 && a.body.includes('TENANT_BYTES_EXCEEDED')).length;
  assert.ok(overBudget >= 4, `refused by the byte budget: ${answers.map((a) => `${a.status} ${a.body.slice(0, 80)}`).join(' | ')}`);
});

test('a JSON-RPC notification (no id) takes no admission token: it is answered 204 and starts nothing', async () => {
  const rpc = (body: unknown) =>
    rawRequest(`${env.url}/a2a/edge`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: 'Bearer demo-umbrella' },
      body: JSON.stringify(body),
    });
  for (let i = 0; i < 4; i++) {
    const r = await rpc({ jsonrpc: '2.0', method: 'SendMessage', params: { message: jsonMessage(`note ${i}`) } });
    assert.equal(r.status, 204, `notification ${i}: ${r.status} ${r.body.slice(0, 200)}`);
  }
  // The tenant's two tokens are still there.
  for (let i = 0; i < 2; i++) {
    const r = await rpc({
      jsonrpc: '2.0',
      id: i,
      method: 'SendMessage',
      params: { message: jsonMessage('real'), configuration: { returnImmediately: true } },
    });
    assert.equal(r.status, 200, r.body.slice(0, 200));
  }
});

test('/metrics: the A2A route label has the route table spelling, whatever the letter case of /a2a', async () => {
  for (const mount of ['/a2a', '/A2A', '/A2a']) {
    const r = await rawRequest(`${env.url}${mount}/edge/tasks`, { headers: { 'a2a-version': '1.0', authorization: 'Bearer demo-globex' } });
    assert.equal(r.status, 200, mount);
  }
  const metrics = await (await fetch(`${env.url}/metrics`)).text();
  const labels = [...metrics.matchAll(/^mesh_http_requests_total\{([^}]*)\} (\S+)$/gm)].map((m) => m[1]!);
  assert.ok(
    labels.some((l) => l.includes('route="/a2a/:agentId/tasks"')),
    labels.join('; '),
  );
  assert.ok(
    labels.every((l) => !/route="\/a2a/i.test(l) || /route="\/a2a\//.test(l)),
    `only one spelling: ${labels.join('; ')}`,
  );
});
