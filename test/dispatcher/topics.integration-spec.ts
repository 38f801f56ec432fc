import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusAdmin } from '@mesh/bus';
import { loadAgentsConfig, startAgents } from '@mesh/app-agents';
import { TopicDefinitions, TopicNames } from '@mesh/contract';
import { freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { loadDispatcherConfig, startDispatcher } from '@mesh/app-dispatcher';
import { DEMO_API_KEYS, loadAuthOptions } from '@mesh/auth';
import { startTestDispatcher } from '../support/dispatcher-harness.js';
import { cleanup, testKafka } from '../support/bus.js';

test('the dispatcher creates the events topic when missing but never grows it (keyed by task: growing splits a task)', async () => {
  const prefix = uniquePrefix('topics');
  const events = new TopicNames(prefix).events();
  const kafka = testKafka('dispatcher-topics');
  const admin = new BusAdmin(kafka);
  cleanup(() => admin.close());
  await admin.ensureTopic(events, { partitions: 2 });
  await startTestDispatcher('topics', {}, { TOPIC_PREFIX: prefix, EVENTS_TOPIC_PARTITIONS: '4' });
  const raw = kafka.admin();
  await raw.connect();
  try {
    const [meta] = (await raw.fetchTopicMetadata({ topics: [events] })).topics;
    assert.equal(meta.partitions.length, 2);
  } finally {
    await raw.disconnect();
  }
});

test('the agents create the events topic with the same EVENTS_TOPIC_PARTITIONS the dispatcher reads (whichever starts first)', async () => {
  const prefix = uniquePrefix('topics-agents');
  const agents = await startAgents({
    ...loadAgentsConfig({
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: prefix,
      DATABASE_URL: await freshDatabase('topics-agents'),
      AGENTS_RUN: 'echo-agent',
      AGENTS_LEDGER_RETENTION_MS: '0',
      EVENTS_TOPIC_PARTITIONS: '5',
      KAFKA_REPLICATION_FACTOR: '1',
    }),
    AGENTS_PORT: 0,
  });
  cleanup(() => agents.stop());
  const definitions = new TopicDefinitions(prefix, { eventsPartitions: 5, replicationFactor: 1 });
  const raw = testKafka('agents-topics').admin();
  await raw.connect();
  try {
    const { topics } = await raw.fetchTopicMetadata({ topics: [definitions.names.events(), definitions.names.commands('echo-agent')] });
    const events = topics.find((t) => t.name === definitions.names.events());
    assert.equal(events?.partitions.length, definitions.events().partitions);
    assert.ok(events?.partitions.every((p) => p.replicas.length === 1));
  } finally {
    await raw.disconnect();
  }
});

test('a dispatcher started before the directory waits for the cards and heartbeats topics (the directory creates them) and starts once they exist', async () => {
  const prefix = uniquePrefix('topics-owner');
  const definitions = new TopicDefinitions(prefix);
  const config = {
    ...loadDispatcherConfig({
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: prefix,
      DATABASE_URL: await freshDatabase('topics-owner'),
      EVENTS_TOPIC_PARTITIONS: '2',
    }),
    DISPATCHER_PORT: 0,
  };
  const admin = new BusAdmin(testKafka('topics-owner'));
  cleanup(() => admin.close());
  let started = false;
  const starting = startDispatcher(config, { auth: loadAuthOptions({ AUTH_API_KEYS: DEMO_API_KEYS }) }).then((d) => {
    started = true;
    cleanup(() => d.stop());
    return d;
  });
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(started, false, 'the dispatcher waits for the directory');
  assert.equal(await admin.topicExists(definitions.names.cards()), false, 'and creates none of its topics');
  assert.equal(await admin.topicExists(definitions.names.heartbeats()), false);
  // The directory (its stand-in here) creates them.
  for (const t of [definitions.cards(), definitions.heartbeats()]) await admin.ensureTopic(t.name, t);
  const dispatcher = await starting;
  assert.equal((await fetch(`${dispatcher.url}/healthz`)).status, 200);
});
