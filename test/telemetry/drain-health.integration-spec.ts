// Readiness vs liveness during a drain: from the moment stop() begins, /healthz answers 503
// "draining" (the pod leaves its Service) while /livez stays 200, until the held turn finishes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineAgent } from '@mesh/agent-sdk';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { BusProducer, createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';
import { ledgerDatabase } from '../agents/agents-fixtures.js';
import { standInForTopicOwners } from '../support/topic-owners.js';
import { runTask, sendCommand } from '../agents/runtime-fixtures.js';

test('a stopping agents runtime is not ready but alive while it drains', async () => {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started = 0;
  const holdAgent = defineAgent({
    id: 'hold-agent',
    card: {
      name: 'Hold Agent',
      description: 'Holds its turn until the test lets it go.',
      version: '1.0.0',
      skills: [{ id: 'hold', name: 'Hold', description: 'Holds', tags: ['test'] }],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
    },
    channel: { visibility: 'public', maxInFlight: 1, partitions: 1 },
    mcpServers: {},
    handler: async (_task, ctx) => {
      started++;
      await gate;
      return ctx.complete('done');
    },
  });
  const db = await ledgerDatabase('drain-health');
  const prefix = uniquePrefix('drainh');
  await standInForTopicOwners(prefix);
  const agents = await startAgents(
    {
      ...loadAgentsConfig({
        KAFKA_BROKERS: testRun().brokers.join(','),
        TOPIC_PREFIX: prefix,
        DATABASE_URL: db.url,
        AGENTS_RUN: 'hold-agent',
        DRAIN_TIMEOUT_MS: '60000',
      }),
      AGENTS_PORT: 0,
    },
    { 'hold-agent': holdAgent },
  );
  const producer = new BusProducer(createKafka({ brokers: testRun().brokers, clientId: 'drain-health-test' }));
  await producer.connect();
  try {
    assert.equal((await fetch(`${agents.url}/healthz`)).status, 200);
    await sendCommand(producer, new TopicNames(prefix), runTask('hold-agent', 'acme', 'hold'));
    await eventually('the turn is running', async () => started === 1);
    const stopped = agents.stop();
    const health = await eventually('readiness says draining', async () => {
      const res = await fetch(`${agents.url}/healthz`);
      const body = (await res.json()) as { status: string };
      return res.status === 503 && body.status === 'draining' ? body : undefined;
    });
    assert.equal(health.status, 'draining');
    const live = await fetch(`${agents.url}/livez`);
    assert.equal(live.status, 200);
    assert.deepEqual(await live.json(), { status: 'draining' });
    open();
    await stopped;
  } finally {
    open();
    await producer.disconnect();
  }
});
