import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadAgentsConfig, startAgents, type AgentsConfig } from '@mesh/agent-runtime';
import { echoAgent, refundAgent, sampleAgents } from '@mesh/app-agents';
import { defineAgent } from '@mesh/agent-sdk';
import { freshDatabase, testRun } from '../support/infra.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { card as cardOf, client, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';

const { dir, prefix } = await startTestDirectory('agents-registration');
const api = client(dir.url);
const db = await freshDatabase('agents-registration');
const config = (patch: Partial<AgentsConfig> = {}): AgentsConfig => ({
  ...loadAgentsConfig({
    KAFKA_BROKERS: testRun().brokers.join(','),
    TOPIC_PREFIX: prefix,
    DATABASE_URL: db,
    AGENTS_RUN: 'echo-agent,refund-agent',
    AGENTS_DIRECTORY_URL: dir.url,
    AGENTS_DIRECTORY_TOKEN: KEYS.acme,
    // refund-agent's billing-tools take only tokens minted with it: without it the worker is refused.
    AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
  }),
  AGENTS_PORT: 0,
  ...patch,
});

test('the agents register their cards at start; a restart adds no version; another tenant can use the public ones', async () => {
  const first = await startAgents(config(), sampleAgents);
  await first.stop();
  const second = await startAgents(config(), sampleAgents);
  after(() => second.stop());
  for (const agent of [refundAgent, echoAgent]) {
    const view = await api(KEYS.globex, 'GET', `/v1/agents/${agent.id}`);
    assert.equal(view.status, 200, JSON.stringify(view.body));
    assert.equal(view.body.tenant, 'acme');
    assert.equal(view.body.visibility, 'public');
    assert.equal(view.body.version, 1, 'the restart did not publish a new version');
    assert.equal(view.body.channel, undefined, 'the channel is shown to the owner only');
    const own = await api(KEYS.acme, 'GET', `/v1/agents/${agent.id}`);
    assert.deepEqual(own.body.channel, { keyTemplate: agent.channel.keyTemplate, partitions: agent.channel.partitions });
  }
});

test('a changed card version is published as a new version', async () => {
  const bumped = defineAgent({ ...echoAgent, card: { ...echoAgent.card, version: '1.1.0' }, channel: echoAgent.channel });
  const running = await startAgents(config({ AGENTS_RUN: ['echo-agent'] }), { 'echo-agent': bumped });
  await running.stop();
  const view = await api(KEYS.acme, 'GET', '/v1/agents/echo-agent');
  assert.equal(view.body.version, 2);
  assert.equal(view.body.card.version, '1.1.0');
});

test('a card the directory refuses, or a missing token, stops the start with a clear error', async () => {
  const invalid = defineAgent({ id: 'broken-agent', card: { name: 'Broken' }, handler: async (_t, ctx) => ctx.complete() });
  await assert.rejects(
    startAgents(config({ AGENTS_RUN: ['broken-agent'] }), { 'broken-agent': invalid }),
    /refused agent "broken-agent" \(400\).*VALIDATION_FAILED/,
  );
  await assert.rejects(startAgents(config({ AGENTS_DIRECTORY_TOKEN: undefined }), sampleAgents), /AGENTS_DIRECTORY_TOKEN/);
});

test("an agent id that another tenant's public agent holds stops the start: the runtime never consumes its commands", async () => {
  // acme registered refund-agent (public) above; globex sees it with the very same card, so nothing
  // would have looked changed.
  await assert.rejects(
    startAgents(config({ AGENTS_RUN: ['refund-agent'], AGENTS_DIRECTORY_TOKEN: KEYS.globex }), sampleAgents),
    /agent "refund-agent" is registered in the directory by another tenant \(acme\)/,
  );
});

test('an agent registered with the tenant-wide key keeps it across a restart unless its definition names a template', async () => {
  const card = cardOf('Ledger Agent') as { name: string; version: string };
  const created = await api(KEYS.acme, 'POST', '/v1/agents', {
    id: 'ledger-agent',
    card,
    channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 2 },
    visibility: 'tenant',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const unnamed = defineAgent({ id: 'ledger-agent', card, channel: { partitions: 2 }, handler: async (_t, ctx) => ctx.complete() });
  assert.equal(unnamed.channel.keyTemplate, '{tenant}:{agent_id}:{context_id}', 'the default a new agent gets');
  await (await startAgents(config({ AGENTS_RUN: ['ledger-agent'] }), { 'ledger-agent': unnamed })).stop();
  let view = await api(KEYS.acme, 'GET', '/v1/agents/ledger-agent');
  assert.deepEqual(view.body.channel, { keyTemplate: '{tenant}:{agent_id}', partitions: 2 }, 'the running deployment keeps its keys');
  assert.equal(view.body.version, 1);

  const named = defineAgent({ ...unnamed, channel: { keyTemplate: '{tenant}:{agent_id}:{context_id}', partitions: 2 } });
  await (await startAgents(config({ AGENTS_RUN: ['ledger-agent'] }), { 'ledger-agent': named })).stop();
  view = await api(KEYS.acme, 'GET', '/v1/agents/ledger-agent');
  assert.deepEqual(view.body.channel, { keyTemplate: '{tenant}:{agent_id}:{context_id}', partitions: 2 });
  assert.equal(view.body.version, 2);
});
