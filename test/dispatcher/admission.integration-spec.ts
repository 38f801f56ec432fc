import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { ConsumerGroups } from '@mesh/contract';
import { eventually } from '../support/infra.js';
import { metricSample } from '../support/metrics.js';
import { startEchoWorker } from '../support/echo-worker.js';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';

// Strict admission: 5 new tasks per second per tenant (burst 20), a healthy worker required (a
// heartbeat and a member in the agent's workers' group), backlog limit 2 commands, the group
// re-measured every 100 ms. Reads are never refused.
const env = await startTestDispatcher(
  'admission',
  {},
  {
    DISPATCHER_TENANT_RATE_PER_S: '5',
    DISPATCHER_TENANT_BURST: '20',
    DISPATCHER_REQUIRE_HEALTHY_WORKER: 'true',
    DISPATCHER_MAX_AGENT_BACKLOG: '2',
    DISPATCHER_BACKLOG_CHECK_MS: '100',
    DISPATCHER_RETRY_AFTER_S: '7',
  },
);
await publishAgents(env.kafka, env.topics, [agentRecord('adm'), agentRecord('lazy'), agentRecord('full'), agentRecord('ghost')]);

const producer = env.kafka.producer();
await producer.connect();
after(() => producer.disconnect());
const heartbeat = (agentId: string) =>
  producer.send({
    topic: env.topics.heartbeats(),
    messages: [{ key: agentId, value: JSON.stringify({ agentId, workerId: 'w1', atUnixMs: Date.now(), ttlMs: 60000 }) }],
  });
const post = (agentId: string, body: unknown, token = 'demo-acme', headers: Record<string, string> = {}) =>
  rawRequest(`${env.url}/a2a/${agentId}/message:send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'a2a-version': '1.0', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const groups = new ConsumerGroups(env.prefix);
/** Resolves once the agent's workers' group has a member (kafkajs joins after the broker's rebalance delay). */
const joined = async (agentId: string) => {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    await eventually(`${agentId}'s group has a member`, async () => {
      const {
        groups: [g],
      } = await admin.describeGroups([groups.agentWorkers(agentId)]);
      return g?.state === 'Stable' && g.members.length > 0;
    });
  } finally {
    await admin.disconnect();
  }
};
/** A worker reading the agent's commands in its workers' group (echoes them). */
const startWorker = async (agentId: string) => {
  const worker = await startEchoWorker(env.kafka, env.topics, agentId, 2, { groupId: groups.agentWorkers(agentId) });
  after(() => worker.stop());
  await joined(agentId);
};
await eventually('agents served', async () => (await fetch(`${env.url}/a2a/ghost/.well-known/agent-card.json`)).ok);

test('admission cannot be passed by spelling the route otherwise: only the exact route is served', async () => {
  const send = (path: string) =>
    rawRequest(`${env.url}/a2a/lazy${path}`, {
      method: 'POST',
      headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0', 'content-type': 'application/json' },
      body: JSON.stringify({ message: jsonMessage('spelled'), configuration: { returnImmediately: true } }),
    });
  // No healthy worker of `lazy` yet: the exact route is refused by admission.
  assert.equal((await send('/message:send')).status, 503);
  for (const path of ['/MESSAGE:SEND', '/message:send/', '/Message:Send', '/acme/message:SEND', '/message:stream/', '/V1/message:send']) {
    const r = await send(path);
    assert.equal(r.status, 404, `${path} → ${r.status} ${r.body.slice(0, 200)}`);
    assert.match(r.body, /case-sensitive/);
  }
  // JSON-RPC: express serves `/a2a/lazy/` and `/a2a/lazy//` as `/a2a/lazy`; admission sees them alike.
  for (const path of ['', '/', '//']) {
    const r = await rawRequest(`${env.url}/a2a/lazy${path}`, {
      method: 'POST',
      headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: jsonMessage('spelled') } }),
    });
    assert.equal(r.status, 503, `JSON-RPC at /a2a/lazy${path} → ${r.status} ${r.body.slice(0, 200)}`);
    assert.equal((JSON.parse(r.body) as { id: unknown }).id, 1, 'refused in the JSON-RPC envelope');
  }
  const list = await rawRequest(`${env.url}/a2a/lazy/tasks`, { headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0' } });
  assert.equal((JSON.parse(list.body) as { totalSize: number }).totalSize, 0, 'no spelling started work');
});

test('an agent without a healthy worker refuses new work with 503 + Retry-After; reads keep working', async () => {
  const r = await post('adm', { message: jsonMessage('hi'), configuration: { returnImmediately: true } }, 'demo-globex');
  assert.equal(r.status, 503);
  assert.equal(r.headers['retry-after'], '7');
  const body = JSON.parse(r.body) as { error: { status: string; details: Array<{ reason: string }> } };
  assert.equal(body.error.status, 'UNAVAILABLE');
  assert.equal(body.error.details[0].reason, 'NO_HEALTHY_WORKER');
  const list = await rawRequest(`${env.url}/a2a/adm/tasks`, { headers: { authorization: 'Bearer demo-globex', 'a2a-version': '1.0' } });
  assert.equal(list.status, 200);
  // JSON-RPC gets the same refusal in its own envelope.
  const rpc = await rawRequest(`${env.url}/a2a/adm`, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-globex', 'a2a-version': '1.0', 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'SendMessage', params: { message: jsonMessage('hi') } }),
  });
  assert.equal(rpc.status, 503);
  assert.equal((JSON.parse(rpc.body) as { error: { data: Array<{ reason: string }> } }).error.data[0].reason, 'NO_HEALTHY_WORKER');
  // Both refusals are counted on /metrics (they never became tasks).
  const metrics = await (await fetch(`${env.url}/metrics`)).text();
  assert.match(metrics, /^mesh_admission_refusals_total\{tenant="globex",agent="adm",reason="NO_HEALTHY_WORKER"\} 2$/m);
  await startWorker('adm');
  await heartbeat('adm');
  const ok = await eventually('accepted once a worker beats', async () => {
    const res = await post('adm', { message: jsonMessage('hi'), configuration: { returnImmediately: true } }, 'demo-globex');
    return res.status === 200 ? res : undefined;
  });
  assert.equal(ok.status, 200);
});

test('a backlog over the limit (consumer lag of the agent workers group) refuses new work with 503', async () => {
  await heartbeat('full');
  // The workers' group exists and has consumed nothing: every command is backlog.
  const admin = env.kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: env.topics.commands('full'), numPartitions: 2 }], waitForLeaders: true });
  await admin.setOffsets({
    groupId: new ConsumerGroups(env.prefix).agentWorkers('full'),
    topic: env.topics.commands('full'),
    partitions: [0, 1].map((p) => ({ partition: p, offset: '0' })),
  });
  await admin.disconnect();
  // A member of the group (a healthy worker) that never finishes a command: nothing is committed.
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const stuck = env.kafka.consumer({ groupId: groups.agentWorkers('full'), maxWaitTimeInMs: 100 });
  await stuck.connect();
  await stuck.subscribe({ topic: env.topics.commands('full') });
  await stuck.run({ eachMessage: () => released });
  after(async () => {
    release();
    await stuck.disconnect();
  });
  await joined('full');
  const sent: string[] = [];
  const refusal = await eventually(
    'backlog refusal',
    async () => {
      const r = await post('full', { message: jsonMessage(`b${sent.length}`), configuration: { returnImmediately: true } }, 'demo-globex');
      if (r.status === 200) sent.push(r.body);
      return r.status === 503 ? r : undefined;
    },
    20000,
    1100,
  );
  assert.ok(sent.length >= 2);
  assert.equal(
    (JSON.parse(refusal.body) as { error: { details: Array<{ reason: string }> } }).error.details[0].reason,
    'AGENT_BACKLOG_FULL',
  );
  const list = await rawRequest(`${env.url}/a2a/full/tasks`, { headers: { authorization: 'Bearer demo-globex', 'a2a-version': '1.0' } });
  assert.equal(list.status, 200);
});

test('heartbeats without a member in the workers group: refused NO_HEALTHY_WORKER, counted; accepted once a worker joins', async () => {
  // A process that beats for the agent but reads nothing: accepted tasks would wait until their deadline.
  await heartbeat('ghost');
  const send = () => post('ghost', { message: jsonMessage('anyone?'), configuration: { returnImmediately: true } }, 'demo-globex');
  const refused = await eventually(
    'refused for want of a reader, once the heartbeat is heard',
    async () => {
      const r = await send();
      return r.status === 503 && /none is reading its commands/.test(r.body) ? r : undefined;
    },
    20000,
    300,
  );
  assert.equal(refused.headers['retry-after'], '7');
  const body = JSON.parse(refused.body) as { error: { status: string; message: string; details: Array<{ reason: string }> } };
  assert.equal(body.error.status, 'UNAVAILABLE');
  assert.equal(body.error.details[0].reason, 'NO_HEALTHY_WORKER');
  assert.match(body.error.message, /^agent "ghost" has no healthy worker: /);
  const counted = await metricSample(env.url, 'mesh_admission_refusals_total', {
    tenant: 'globex',
    agent: 'ghost',
    reason: 'NO_HEALTHY_WORKER',
  });
  assert.ok((counted ?? 0) >= 1, 'the refusal is counted');
  const list = await rawRequest(`${env.url}/a2a/ghost/tasks`, { headers: { authorization: 'Bearer demo-globex', 'a2a-version': '1.0' } });
  assert.equal((JSON.parse(list.body) as { totalSize: number }).totalSize, 0, 'nothing was accepted');

  await startWorker('ghost');
  const ok = await eventually(
    'accepted once a worker reads the commands',
    async () => ((await send()).status === 200 ? true : undefined),
    10000,
    300,
  );
  assert.ok(ok);
});

test('a tenant over its rate gets 429 + Retry-After (runs last: it empties the bucket)', async () => {
  await startWorker('lazy');
  await heartbeat('lazy');
  await eventually(
    'lazy healthy',
    async () => (await post('lazy', { message: jsonMessage('warm'), configuration: { returnImmediately: true } })).status === 200,
  );
  let refused;
  for (let i = 0; i < 60 && !refused; i++) {
    const r = await post('lazy', { message: jsonMessage(`r${i}`), configuration: { returnImmediately: true } });
    if (r.status === 429) refused = r;
  }
  assert.ok(refused, 'expected a 429 within the burst');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.equal((JSON.parse(refused.body) as { error: { details: Array<{ reason: string }> } }).error.details[0].reason, 'RATE_LIMITED');
});
