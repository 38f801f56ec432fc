import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
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
