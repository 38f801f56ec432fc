import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Task } from '@a2a-js/sdk';
import { ConsumerGroups } from '@mesh/contract';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';
import { metricSample } from '../support/metrics.js';

// docs/contract.md §7: the dispatcher's /metrics counts tasks by outcome and the duplicates it absorbed.
const env = await startTestDispatcher('metrics');
await publishAgents(env.kafka, env.topics, [agentRecord('counted')]);
const worker = await startEchoWorker(env.kafka, env.topics, 'counted');
after(() => worker.stop());
await eventually('the agent is served', async () => (await fetch(`${env.url}/a2a/counted/.well-known/agent-card.json`)).ok);

test('/metrics: accepted, completed, failed, input_required and canceled tasks, and message_id dedup hits', async () => {
  const client = await a2aClient(env.url, 'counted', 'JSONRPC');
  const outcome = (o: string) => metricSample(env.url, 'mesh_tasks_total', { tenant: 'acme', agent: 'counted', outcome: o });

  const retried = userMessage('counted once');
  const done = (await client.sendMessage(sendRequest(retried))) as Task;
  const again = (await client.sendMessage(sendRequest(retried))) as Task;
  assert.equal(again.id, done.id);
  await client.sendMessage(sendRequest(userMessage('no-artifact')));
  await client.sendMessage(sendRequest(userMessage('need-input please')));
  const silent = (await client.sendMessage(sendRequest(userMessage('silent'), { returnImmediately: true }))) as Task;
  await client.cancelTask({ tenant: '', id: silent.id, metadata: undefined });

  assert.equal(await outcome('accepted'), 4, 'four tasks accepted; the retry is not a new one');
  assert.equal(await metricSample(env.url, 'mesh_dedup_hits_total', { kind: 'message_id', agent: 'counted' }), 1);
  await eventually('settled turns counted', async () => (await outcome('completed')) === 1 && (await outcome('failed')) === 1);
  assert.equal(await outcome('input_required'), 1);
  assert.equal(await outcome('canceled'), 1);
});

test('/metrics: mesh_dead_letters_total starts at 0 for the events topic and counts an undecodable event', async () => {
  const topic = env.topics.events();
  const dead = (reason: string) => metricSample(env.url, 'mesh_dead_letters_total', { topic, reason });
  for (const reason of ['undecodable', 'not_retryable', 'attempts_exhausted'])
    assert.equal(await dead(reason), 0, `${reason} at 0 from the start`);
  const producer = env.kafka.producer();
  await producer.connect();
  after(() => producer.disconnect());
  await producer.send({ topic, messages: [{ key: 'not-a-task', value: '{"not":"an envelope"}' }] });
  await eventually('the poison event counted', async () => (await dead('undecodable')) === 1);
  assert.equal(await dead('not_retryable'), 0);
});

test('/metrics: HTTP requests by route pattern and status class, never a raw path', async () => {
  const card = await fetch(`${env.url}/a2a/counted/.well-known/agent-card.json`);
  assert.equal(card.status, 200);
  assert.equal((await fetch(`${env.url}/no/such/path-${Date.now()}`)).status, 404);
  const text = await (await fetch(`${env.url}/metrics`)).text();
  const routes = [...text.matchAll(/^mesh_http_requests_total\{([^}]*)\} (\S+)$/gm)].map((m) => m[1]);
  assert.ok(
    routes.some((l) => /route="unmatched"/.test(l) && /status_class="4xx"/.test(l)),
    'an unknown path counts as unmatched',
  );
  assert.ok(
    routes.every((l) => !/path-\d/.test(l) && !/counted/.test(l)),
    `no raw path or agent id in a label: ${routes.join('; ')}`,
  );
  assert.ok(routes.some((l) => l.includes('route="/a2a/:agentId/.well-known/agent-card.json"') && /status_class="2xx"/.test(l)));
  assert.ok((await metricSample(env.url, 'mesh_http_request_duration_seconds_count', { route: '/a2a/:agentId', method: 'POST' }))! >= 1);
});

test('/metrics: tenant × agent series are bounded by METRICS_MAX_TENANT_AGENT_PAIRS, tenants dropped by METRICS_TENANT_LABELS=false', async () => {
  const bounded = await startTestDispatcher('metrics-bounds', {}, { METRICS_TENANT_LABELS: 'false', METRICS_MAX_TENANT_AGENT_PAIRS: '1' });
  await publishAgents(bounded.kafka, bounded.topics, [agentRecord('first'), agentRecord('second')]);
  for (const id of ['first', 'second']) {
    await eventually(`${id} is served`, async () => (await fetch(`${bounded.url}/a2a/${id}/.well-known/agent-card.json`)).ok);
    const client = await a2aClient(bounded.url, id, 'JSONRPC');
    await client.sendMessage(sendRequest(userMessage('count me'), { returnImmediately: true }));
  }
  const accepted = (tenant: string, agent: string) => metricSample(bounded.url, 'mesh_tasks_total', { tenant, agent, outcome: 'accepted' });
  assert.equal(await accepted('_all', 'first'), 1, 'the first pair keeps its agent, without the tenant');
  assert.equal(await accepted('_other', '_other'), 1, 'the second pair goes to the overflow series');
  assert.doesNotMatch(await (await fetch(`${bounded.url}/metrics`)).text(), /mesh_tasks_total\{[^}]*(tenant="acme"|agent="second")/);
});

test('/metrics names no agent that is not public: its tasks, refusals, dedup hits and backlog go by its alias', async () => {
  // `/metrics` needs no token. Admission is on, so refusals can be counted for both agents.
  const strict = await startTestDispatcher(
    'metrics-private',
    {},
    { DISPATCHER_REQUIRE_HEALTHY_WORKER: 'true', DISPATCHER_BACKLOG_CHECK_MS: '100', DISPATCHER_METRICS_INTERVAL_MS: '200' },
  );
  const hidden = 'hidden-ledger';
  const shown = 'shown-ledger';
  const alias = `private-${createHash('sha256').update(hidden).digest('hex').slice(0, 12)}`;
  await publishAgents(strict.kafka, strict.topics, [agentRecord(hidden, { visibility: 'private' }), agentRecord(shown)]);
  const send = (agentId: string, text: string, messageId?: string) =>
    rawRequest(`${strict.url}/a2a/${agentId}/message:send`, {
      method: 'POST',
      headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0', 'content-type': 'application/json' },
      body: JSON.stringify({ message: jsonMessage(text, messageId ? { messageId } : {}) }),
    });
  // No worker yet: both refused by admission.
  for (const id of [hidden, shown]) {
    await eventually(`${id} served`, async () => (await send(id, 'early')).status === 503);
  }
  // Then a worker reading each agent's commands in its workers' group, and its heartbeats.
  const groups = new ConsumerGroups(strict.prefix);
  for (const id of [hidden, shown]) {
    const w = await startEchoWorker(strict.kafka, strict.topics, id, 2, { groupId: groups.agentWorkers(id) });
    after(() => w.stop());
  }
  // Dead-letter topics too: the backlog sampler's read of a missing one waits out the client's retries.
  const admin = strict.kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [hidden, shown].map((id) => ({ topic: strict.topics.deadLetters(strict.topics.commands(id)), numPartitions: 1 })),
  });
  await admin.disconnect();
  const producer = strict.kafka.producer();
  await producer.connect();
  after(() => producer.disconnect());
  await producer.send({
    topic: strict.topics.heartbeats(),
    messages: [hidden, shown].map((agentId) => ({
      key: agentId,
      value: JSON.stringify({ agentId, workerId: 'w', atUnixMs: Date.now(), ttlMs: 600000 }),
    })),
  });
  for (const id of [hidden, shown]) {
    const messageId = `${id}-once`;
    await eventually(`${id} accepts`, async () => (await send(id, 'counted', messageId)).status === 200);
    assert.equal((await send(id, 'counted', messageId)).status, 200, 'a retry: a dedup hit');
  }
  const tasks = (agent: string, outcome: string) => metricSample(strict.url, 'mesh_tasks_total', { tenant: 'acme', agent, outcome });
  const text = await eventually('every series sampled', async () => {
    const t = await (await fetch(`${strict.url}/metrics`)).text();
    const ready =
      (await tasks(alias, 'completed')) === 1 &&
      (await tasks(shown, 'completed')) === 1 &&
      [alias, shown].every((agent) => t.includes(`mesh_agent_backlog{agent="${agent}"}`));
    return ready ? t : undefined;
  });
  assert.doesNotMatch(text, new RegExp(hidden), 'the non-public agent id is on no series');
  for (const agent of [alias, shown]) {
    assert.equal(await tasks(agent, 'accepted'), 1, `${agent}: accepted`);
    assert.ok(
      ((await metricSample(strict.url, 'mesh_admission_refusals_total', { tenant: 'acme', agent, reason: 'NO_HEALTHY_WORKER' })) ?? 0) >= 1,
    );
    assert.equal(await metricSample(strict.url, 'mesh_dedup_hits_total', { kind: 'message_id', agent }), 1, `${agent}: dedup hit`);
  }
});
