import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { defineAgent, textOf } from '@mesh/agent-sdk';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { partitionOfKey } from '@mesh/bus';
import { ChannelKey, Envelopes, TopicNames } from '@mesh/contract';
import { eventually, freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { standInForTopicOwners } from '../support/topic-owners.js';
import { commandProducer, EventCollector, runTask, sendCommand } from './runtime-fixtures.js';

// AGENTS_TENANT_MAX_IN_FLIGHT through the real runtime and broker: a tenant's runs beyond its
// limit wait in the bus while another tenant's run at once, and a cancel is never held back by it.

/** Turns that started (by message text), and how to end each one. */
const started: string[] = [];
const release = new Map<string, () => void>();
const gate = defineAgent({
  id: 'gate-agent',
  card: { name: 'Gate' },
  handler: async (task, ctx) => {
    const text = textOf(task.parts);
    started.push(text);
    await new Promise<void>((resolve) => {
      release.set(text, resolve);
      task.signal.addEventListener('abort', () => resolve());
    });
    if (task.signal.aborted) return ctx.fail('aborted');
    return ctx.complete(`done ${text}`);
  },
});

const db = await freshDatabase('tenant-limit');
const prefix = uniquePrefix('tenant-limit');
const topics = new TopicNames(prefix);
await standInForTopicOwners(prefix);
const agents = await startAgents(
  {
    ...loadAgentsConfig({
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: prefix,
      DATABASE_URL: db,
      AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
      AGENTS_RUN: 'gate-agent',
      AGENTS_MAX_IN_FLIGHT: '10',
      AGENTS_TENANT_MAX_IN_FLIGHT: '1',
    }),
    AGENTS_PORT: 0,
  },
  { [gate.id]: gate },
);
after(() => agents.stop());
const events = new EventCollector();
await events.start(topics);
const producer = await commandProducer();

test("a tenant at its limit waits while another tenant's run starts; a cancel of its running turn is not held back", async () => {
  const a1 = runTask('gate-agent', 'acme', 'a1');
  const a2 = runTask('gate-agent', 'acme', 'a2');
  const g1 = runTask('gate-agent', 'globex', 'g1');
  for (const cmd of [a1, a2, g1]) await sendCommand(producer, topics, cmd);
  await eventually('a1 and g1 started', () => started.includes('a1') && started.includes('g1'), 20000);
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual([...started].sort(), ['a1', 'g1'], 'a2 waits for acme’s one slot');

  // acme is at its limit: the cancel of its running turn must still get through.
  await sendCommand(producer, topics, Envelopes.cancel(a1.identity, { reason: 'changed my mind' }));
  assert.equal((await events.final(a1.identity.taskId, 1, 10000)).body.state, 'TASK_STATE_CANCELED');
  await eventually('a2 started once a1 gave its slot back', () => started.includes('a2'), 10000);

  release.get('a2')!();
  release.get('g1')!();
  assert.equal((await events.final(a2.identity.taskId)).body.state, 'TASK_STATE_COMPLETED');
  assert.equal((await events.final(g1.identity.taskId)).body.state, 'TASK_STATE_COMPLETED');
});

test("the limit is the tenant's whatever its keys: per-context keys on different partitions still wait for its slot", async () => {
  // Under the default channel key each context of a tenant has its own key; picked here so the
  // three land on three partitions of the agent's topic (gate-agent has the default 4).
  const key = ChannelKey.parse();
  const runs = [];
  const partitions = new Set<number>();
  for (let i = 0; runs.length < 3; i++) {
    const cmd = runTask('gate-agent', 'acme', `spread-${i}`);
    const k = key.render({ tenant: 'acme', agent_id: 'gate-agent', context_id: cmd.identity.contextId, task_id: cmd.identity.taskId });
    const p = partitionOfKey(k, gate.channel.partitions);
    if (partitions.has(p)) continue;
    partitions.add(p);
    runs.push({ cmd, k });
  }
  const g = runTask('gate-agent', 'globex', 'g-spread');
  for (const { cmd, k } of runs) await producer.send(topics.commands('gate-agent'), k, cmd);
  await sendCommand(producer, topics, g);
  await eventually(
    'globex started, and one of acme’s three',
    () => started.includes('g-spread') && started.some((t) => t.startsWith('spread-')),
    20000,
  );
  await new Promise((r) => setTimeout(r, 500));
  const acme = () => started.filter((t) => t.startsWith('spread-'));
  assert.equal(acme().length, 1, `acme has one slot whatever its keys: ${JSON.stringify(acme())}`);

  // Each one ended gives the slot to the next, until all three ran.
  for (let n = 1; n <= 3; n++) {
    await eventually(`acme's run ${n} started`, () => acme().length === n, 10000);
    release.get(acme()[n - 1]!)!();
  }
  release.get('g-spread')!();
  for (const { cmd } of runs) assert.equal((await events.final(cmd.identity.taskId)).body.state, 'TASK_STATE_COMPLETED');
});
