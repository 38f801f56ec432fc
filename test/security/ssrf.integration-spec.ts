import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressPolicy, PinnedHttpClient } from '@mesh/egress';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';
import { eventually } from '../support/infra.js';

// SSRF: every URL the platform calls on a user's behalf goes through @mesh/egress. The same
// table of hostile URLs is checked against the policy (real DNS, no allowlist), the pinned client
// (nothing ever connects to the canary listener) and the dispatcher's push-config API, in the A2A
// 1.0 shape so that each URL passes the request schema and meets the egress rules; one allowed URL
// on the same path tells a refusal by those rules from one by the schema.
//
// The directory fetches no user-given URL: agent card signatures are verified with keys from
// DIRECTORY_TRUSTED_JWKS (inline), and AUTH_JWKS_URL is operator configuration read by jose.

/** A listener on loopback that must never be reached; its port is put into the hostile URLs. */
let hits = 0;
const canary = http.createServer((_req, res) => {
  hits += 1;
  res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
});
await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
after(() => canary.close());
const port = (canary.address() as AddressInfo).port;

/** Hostile push / callback URLs (all point at loopback, private ranges or metadata). */
export const HOSTILE_URLS = [
  `http://127.0.0.1:${port}/`,
  `http://localhost:${port}/`, // real DNS → 127.0.0.1 / ::1
  `http://127.1:${port}/`,
  `http://2130706433:${port}/`, // decimal
  `http://0x7f000001:${port}/`, // hex
  `http://017700000001:${port}/`, // octal
  `http://0177.0.0.01:${port}/`,
  `http://[::1]:${port}/`,
  `http://[0:0:0:0:0:0:0:1]:${port}/`,
  `http://[::ffff:127.0.0.1]:${port}/`,
  `http://[::ffff:7f00:1]:${port}/`,
  `http://[::127.0.0.1]:${port}/`, // IPv4-compatible
  `http://[64:ff9b::7f00:1]:${port}/`, // NAT64 of loopback
  `http://[2002:7f00:1::]:${port}/`, // 6to4 of loopback
  'http://[::]/',
  'http://0.0.0.0/',
  'http://0/',
  'http://10.0.0.1/',
  'http://172.31.255.255/',
  'http://192.168.1.1/',
  'http://100.100.100.200/', // CGNAT (Alibaba metadata)
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00:ec2::254]/', // AWS IPv6 metadata (ULA)
  'http://[fe80::1]/',
  'http://224.0.0.1/',
  'http://255.255.255.255/',
  'http://198.18.0.1/',
  `http://user:pw@example.com/`,
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_INFO',
];

const policy = new EgressPolicy();
const client = new PinnedHttpClient(policy);

// All setup happens before the first test(): node:test may run the root `after` hooks (which drop
// the databases) as soon as the tests declared so far have finished.
// --- Push notification URLs (dispatcher) --------------------------------------------------------

/**
 * A push receiver on 127.0.0.2, the one address the dispatcher's egress policy admits
 * (PUSH_EGRESS_ALLOW_CIDRS): no hostile URL names it, so the refusals below are the policy's own.
 */
const allowedHits: string[] = [];
const allowed = http.createServer((req, res) => {
  allowedHits.push(req.url ?? '');
  req.resume();
  res.writeHead(200).end();
});
await new Promise<void>((r) => allowed.listen(0, '127.0.0.2', r));
after(() => allowed.close());
const allowedUrl = `http://127.0.0.2:${(allowed.address() as AddressInfo).port}/hook`;

const disp = await startTestDispatcher('sec-ssrf', {}, { PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.2/32' });
await publishAgents(disp.kafka, disp.topics, [
  agentRecord('echo', { card: { ...agentRecord('echo').card, capabilities: { streaming: true, pushNotifications: true } } }),
]);
const worker = await startEchoWorker(disp.kafka, disp.topics, 'echo');
after(() => worker.stop());
await eventually('echo served', async () => (await fetch(`${disp.url}/a2a/echo/.well-known/agent-card.json`)).ok);
const h = { authorization: 'Bearer demo-acme', 'content-type': 'application/json', 'a2a-version': '1.0' };
const rpc = async (method: string, params: unknown) =>
  JSON.parse(
    (
      await rawRequest(`${disp.url}/a2a/echo`, {
        method: 'POST',
        headers: h,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      })
    ).body,
  ) as {
    result?: { id?: string };
    error?: { code: number; message: string };
  };

test('the egress policy refuses every hostile URL (real DNS, no allowlist)', async () => {
  for (const url of HOSTILE_URLS) await assert.rejects(policy.check(url), (e: Error) => e.name === 'EgressRefused', url);
});

test('the pinned client never connects to a refused target', async () => {
  for (const url of HOSTILE_URLS) await assert.rejects(client.request(url, { body: '{}', timeoutMs: 2000 }), url);
  assert.equal(hits, 0, 'the canary was never reached');
});

test('redirects are never followed, whatever the status or target', async () => {
  const allowed = new PinnedHttpClient(new EgressPolicy({ allowCidrs: ['127.0.0.1/32'] }));
  const before = hits;
  await assert.rejects(allowed.request(`http://127.0.0.1:${port}/`, { body: '{}' }), /redirect \(302\) not followed/);
  assert.equal(hits, before + 1, 'one request to the allowlisted listener, none to where it redirected');
});

test('DNS is resolved once and pinned: a name cannot rebind between check and connect', async () => {
  let answers = 0;
  // First answer (checked) is the allowlisted loopback; any later lookup would say metadata.
  const rebinding = new EgressPolicy({
    allowCidrs: ['127.0.0.1/32'],
    lookup: async () => [{ address: answers++ === 0 ? '127.0.0.1' : '169.254.169.254', family: 4 }],
  });
  const before = hits;
  await assert.rejects(new PinnedHttpClient(rebinding).request(`http://rebind.test:${port}/`, { body: '{}' }), /redirect/);
  assert.equal(answers, 1, 'one lookup only');
  assert.equal(hits, before + 1, 'connected to the address that was checked');
});

/** An egress refusal names the address and its range, the host, or the rule (never a schema field). */
const EGRESS_REFUSAL =
  /^push URL refused: (\S+ \(\w+\) is not a public address|host \S+ does not resolve to public addresses only|credentials in the URL are not allowed)/;
/** Schemes other than http(s) are refused by the request schema, before the egress rules. */
const NOT_HTTP = new Set(HOSTILE_URLS.filter((u) => !/^https?:/.test(u)));

test('push notification configs with hostile URLs are refused by the egress rules and never called', async () => {
  const task = await rpc('SendMessage', { message: jsonMessage('need-input please'), configuration: { returnImmediately: false } });
  const taskId = task.result?.id ?? (task.result as { task?: { id: string } } | undefined)?.task?.id;
  assert.ok(taskId, JSON.stringify(task));
  // The same request with an admitted URL is created: the shape is right, only the URL decides.
  const ok = await rpc('CreateTaskPushNotificationConfig', { taskId, id: 'allowed', url: allowedUrl });
  assert.equal((ok.result as { url?: string } | undefined)?.url, allowedUrl, JSON.stringify(ok));
  for (const [i, url] of HOSTILE_URLS.entries()) {
    const r = await rpc('CreateTaskPushNotificationConfig', { taskId, id: `c${i}`, url });
    assert.ok(r.error, `refused: ${url} → ${JSON.stringify(r.result)}`);
    assert.equal(r.error.code, -32602, `${url}: invalid params (${r.error.message})`);
    if (NOT_HTTP.has(url)) assert.equal(r.error.message, 'params.url: refused: not an absolute http or https URL', url);
    else assert.match(r.error.message, EGRESS_REFUSAL, `${url}: refused by the egress rules, not the schema`);
  }
  const configs = await rpc('ListTaskPushNotificationConfigs', { taskId });
  assert.deepEqual(
    (configs.result as { configs?: Array<{ id: string }> } | undefined)?.configs?.map((c) => c.id),
    ['allowed'],
    JSON.stringify(configs),
  );
  // The follow-up notifies every config of the task: the admitted receiver hears of it, the canary never.
  await rpc('SendMessage', { message: jsonMessage('again', { taskId }), configuration: { returnImmediately: false } });
  await eventually('the admitted receiver was notified', () => allowedHits.length > 0);
  assert.equal(hits, 2, 'only the two deliberate requests of the tests above');
});

test('a push URL refusal never says what, or whether, a name resolved: one answer for a loopback name and a missing one', async () => {
  const refusals: string[] = [];
  for (const host of ['localhost', 'no-such-host.invalid']) {
    const r = await rpc('SendMessage', {
      message: jsonMessage('need-input please'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `http://${host}:${port}/hook` } },
    });
    assert.equal(r.error?.code, -32602, `${host}: ${JSON.stringify(r)}`);
    const message = r.error.message;
    assert.doesNotMatch(message, /127\.0\.0\.1|::1|loopback|resolves to|ENOTFOUND/, host);
    refusals.push(message.replace(host, '<host>'));
  }
  assert.equal(refusals[0], refusals[1]);
  assert.match(refusals[0], /host <host> does not resolve to public addresses only/);
});
