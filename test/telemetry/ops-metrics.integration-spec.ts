// /metrics moves with the system: consumer lag (published by the dispatcher, which runs while the
// workers are scaled to zero) grows with a backlog and drains back to 0; an unknown tool outcome
// shows as open on the agents and goes back to 0 when resolved (here through /ops).
import { test, after } from 'node:test';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { defineAgent } from '@mesh/agent-sdk';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import { eventually, testRun } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { metricSample } from '../support/metrics.js';
import { ledgerDatabase } from '../agents/agents-fixtures.js';
import { BusProducer } from '@mesh/bus';
import { runTask, sendCommand } from '../agents/runtime-fixtures.js';
import { createKafka } from '@mesh/bus';

let open!: () => void;
const gate = new Promise<void>((resolve) => (open = resolve));
const gateAgent = defineAgent({
  id: 'gate-agent',
  card: {
    name: 'Gate Agent',
    description: 'Holds every turn until the test opens the gate.',
    version: '1.0.0',
    skills: [{ id: 'wait', name: 'Wait', description: 'Waits', tags: ['test'] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
  },
  channel: { visibility: 'public', maxInFlight: 1, partitions: 1 },
  mcpServers: {},
  handler: async (_task, ctx) => {
    await gate;
    return ctx.complete('done');
  },
});

// Visible to its tenant only: the agents' /metrics (no token) must not name it.
const hushAgent = defineAgent({
  id: 'hush-agent',
  card: { ...gateAgent.card, name: 'Hush Agent', description: 'Answers at once; not public.' },
  channel: { visibility: 'tenant', partitions: 1 },
  mcpServers: {},
  handler: async (_task, ctx) => ctx.complete('done'),
});

const dispatcher = await startTestDispatcher('opsm', {}, { DISPATCHER_METRICS_INTERVAL_MS: '200' });
const prefix = dispatcher.prefix;
await publishAgents(dispatcher.kafka, dispatcher.topics, [
  agentRecord('gate-agent', { channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 1 } }),
]);
const db = await ledgerDatabase('ops-metrics');
const topics = new TopicNames(prefix);
const TOKEN = 'ops-secret-token';
const agents = await startAgents(
  {
    ...loadAgentsConfig({
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: prefix,
      DATABASE_URL: db.url,
      AGENTS_AGENT_IDS: 'gate-agent,hush-agent',
      AGENTS_METRICS_INTERVAL_MS: '200',
      AGENTS_RECONCILE_INTERVAL_MS: '200',
      AGENTS_OPS_TOKEN: TOKEN,
      AGENTS_GROUP: 'payments',
    }),
    AGENTS_PORT: 0,
  },
  { 'gate-agent': gateAgent, 'hush-agent': hushAgent },
);
after(async () => {
  open();
  await agents.stop();
});
const producer = new BusProducer(createKafka({ brokers: testRun().brokers, clientId: 'ops-metrics-test' }));
await producer.connect();
after(() => producer.disconnect());

const ops = (path: string, init: RequestInit = {}) =>
  fetch(`${agents.url}/ops${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });

/** The value of one sample of the agents' `/metrics`, by metric name and a label subset. */
const sample = (name: string, labels: Record<string, string>) => metricSample(agents.url, name, labels);

test('every /metrics sample carries the agent group (AGENTS_GROUP, label agent_group)', async () => {
  const text = await (await fetch(`${agents.url}/metrics`)).text();
  const samples = text.split('\n').filter((l) => l && !l.startsWith('#'));
  assert.ok(samples.length > 20);
  for (const line of samples) assert.match(line, /agent_group="payments"/, line);
  assert.ok((await sample('mesh_agent_turns_in_flight', { agent: 'gate-agent', agent_group: 'payments' })) !== undefined);
});

test("consumer lag on the dispatcher's /metrics grows with a backlog and drains back to 0", async () => {
  const lagLabels = { group: new ConsumerGroups(prefix).agentWorkers('gate-agent'), topic: topics.commands('gate-agent') };
  const lagOf = (name: string, labels: Record<string, string>) => metricSample(dispatcher.url, name, labels);
  for (let i = 0; i < 5; i++) await sendCommand(producer, topics, runTask('gate-agent', 'acme', `task ${i}`));
  await eventually('lag > 0 while the gate is closed', async () => ((await lagOf('mesh_consumer_lag', lagLabels)) ?? 0) > 0);
  assert.ok(((await lagOf('mesh_agent_backlog', { agent: 'gate-agent' })) ?? 0) > 0);
  // Published once, by the dispatcher: the agents replicas do not repeat the same partitions.
  assert.equal(await sample('mesh_consumer_lag', lagLabels), undefined);
  // The gauge is sampled every 200 ms: wait for the sample that sees the consumer full (twice the turn limit).
  await eventually('in-flight at twice the turn limit', async () => (await sample('mesh_in_flight', { group: lagLabels.group })) === 2);
  assert.equal(await sample('mesh_in_flight', { group: lagLabels.group }), 2, 'the consumer admits twice the turn limit and no more');
  const lag = (await (await ops('/lag')).json()) as { agents: Array<{ agentId: string; lag: number }> };
  assert.ok(lag.agents.find((a) => a.agentId === 'gate-agent')!.lag > 0);
  open();
  await eventually('lag back to 0 after the drain', async () => (await lagOf('mesh_consumer_lag', lagLabels)) === 0, 30000);
  assert.equal(await lagOf('mesh_agent_backlog', { agent: 'gate-agent' }), 0);
  const workers = (await (await ops('/workers')).json()) as {
    agents: Array<{ agentId: string; processed: number; deadLettered: number; skippedFinished: number }>;
  };
  const gate = workers.agents.find((a) => a.agentId === 'gate-agent')!;
  assert.ok(gate.processed >= 5, JSON.stringify(gate));
  assert.deepEqual([gate.deadLettered, gate.skippedFinished], [0, 0], 'nothing dead-lettered, nothing handed over');
});

test('an unknown outcome is open on /metrics and /ops until resolved, then 0', async () => {
  const key = `acme:task-u:mcp__nowhere__charge:${Date.now()}`;
  const effect = {
    key,
    tenant: 'acme',
    taskId: 'task-u',
    executionId: 'exec-u',
    tool: 'mcp__nowhere__charge',
    argsHash: 'h',
    args: {},
    sideEffect: true,
    owner: 'lost-worker',
  };
  assert.equal((await db.ledger.claim(effect, 60000)).kind, 'claimed');
  await db.ledger.markUnknown(key, 'lost-worker', 'timeout: no answer');
  const labels = { server: 'nowhere', tool: 'charge' };
  await eventually('unknown open = 1', async () => (await sample('mesh_unknown_outcomes_open', labels)) === 1);

  assert.equal((await fetch(`${agents.url}/ops/unknowns`)).status, 401, 'the ops token is required');
  const listed = (await (await ops('/unknowns')).json()) as { unknowns: Array<{ key: string; tool: string; reason: string }> };
  assert.deepEqual(
    listed.unknowns.map((u) => [u.key, u.tool, u.reason]),
    [[key, 'mcp__nowhere__charge', 'timeout: no answer']],
  );
  assert.equal((await ops(`/unknowns/${encodeURIComponent(key)}/resolve`, { method: 'POST', body: '{"state":"maybe"}' })).status, 400);
  const resolved = await ops(`/unknowns/${encodeURIComponent(key)}/resolve`, { method: 'POST', body: '{"state":"absent"}' });
  assert.equal(resolved.status, 201);
  assert.equal(await sample('mesh_unknown_outcomes_open', labels), 0);
  assert.equal((await ops(`/unknowns/${encodeURIComponent(key)}/resolve`, { method: 'POST', body: '{"state":"absent"}' })).status, 404);
});

test('mesh_dead_letters_total: series at 0 for every reason from the start; an undecodable command counts', async () => {
  const topic = topics.commands('gate-agent');
  const dead = (reason: string) => sample('mesh_dead_letters_total', { topic, reason });
  assert.equal(await dead('not_retryable'), 0);
  assert.equal(await dead('attempts_exhausted'), 0);
  const before = (await dead('undecodable')) ?? -1;
  assert.equal(before, 0);
  await producer.sendRecord(topic, 'acme:gate-agent', '{"not":"an envelope"}');
  await eventually('the poison command counted', async () => (await dead('undecodable')) === 1);
  // The dispatcher reports what the dead-letter topic holds.
  const depth = () => metricSample(dispatcher.url, 'mesh_dead_letter_depth', { topic: topics.deadLetters(topic) });
  await eventually('dead-letter depth 1', async () => (await depth()) === 1);
});

test("an agent that is not public goes by its alias on the agents' /metrics: turns, in-flight, group, topic, dedup hits", async () => {
  const alias = `private-${createHash('sha256').update('hush-agent').digest('hex').slice(0, 12)}`;
  const cmd = runTask('hush-agent', 'acme', 'hello');
  await sendCommand(producer, topics, cmd);
  await eventually(
    'the turn counted',
    async () => ((await sample('mesh_agent_turns_total', { agent: alias, state: 'completed' })) ?? 0) >= 1,
  );
  // The same command again: answered from the execution ledger.
  await sendCommand(producer, topics, cmd);
  await eventually(
    'the redelivery counted',
    async () => (await sample('mesh_dedup_hits_total', { kind: 'execution_id', agent: alias })) === 1,
  );
  await eventually('in-flight sampled', async () => (await sample('mesh_in_flight', { group: alias })) !== undefined);
  const text = await (await fetch(`${agents.url}/metrics`)).text();
  assert.doesNotMatch(text, /hush-agent/, 'the agent id is on no series');
  assert.notEqual(await sample('mesh_agent_turns_in_flight', { agent: alias }), undefined);
  assert.equal(await sample('mesh_dead_letters_total', { topic: alias, reason: 'undecodable' }), 0);
  assert.notEqual(await sample('mesh_agent_turns_in_flight', { agent: 'gate-agent' }), undefined, 'a public agent keeps its id');
});
