import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusAdmin } from '@mesh/bus';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { echoAgent, sampleAgents } from '@mesh/app-agents';
import { TopicDefinitions, TopicNames } from '@mesh/contract';
import { freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { loadDispatcherConfig, startDispatcher } from '@mesh/app-dispatcher';
import { DEMO_API_KEYS, loadAuthOptions } from '@mesh/auth';
import { startTestDispatcher } from '../support/dispatcher-harness.js';
import { cleanup, testKafka } from '../support/bus.js';
import { commandProducer, EventCollector, runTask, sendCommand } from '../agents/runtime-fixtures.js';

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

test("agents without a directory create their command topic (their own registry) but not the events or heartbeats topic (the dispatcher's, the directory's)", async () => {
  const prefix = uniquePrefix('topics-agents');
  const agents = await startAgents(
    {
      ...loadAgentsConfig({
        KAFKA_BROKERS: testRun().brokers.join(','),
        TOPIC_PREFIX: prefix,
        DATABASE_URL: await freshDatabase('topics-agents'),
        AGENTS_RUN: 'echo-agent',
        AGENTS_LEDGER_RETENTION_MS: '0',
        KAFKA_REPLICATION_FACTOR: '1',
      }),
      AGENTS_PORT: 0,
    },
    sampleAgents,
  );
  cleanup(() => agents.stop());
  const definitions = new TopicDefinitions(prefix, { eventsPartitions: 5, replicationFactor: 1 });
  const admin = new BusAdmin(testKafka('agents-topics'));
  cleanup(() => admin.close());
  assert.equal(await admin.topicExists(definitions.names.events()), false);
  assert.equal(await admin.topicExists(definitions.names.heartbeats()), false);
  const raw = testKafka('agents-topics').admin();
  await raw.connect();
  try {
    const [commands] = (await raw.fetchTopicMetadata({ topics: [definitions.names.commands('echo-agent')] })).topics;
    assert.equal(commands?.partitions.length, echoAgent.channel.partitions);
    assert.ok(commands?.partitions.every((p) => p.replicas.length === 1));
  } finally {
    await raw.disconnect();
  }
  // Once the dispatcher created the events topic, turns report on it; the heartbeats the agents
  // keep sending into the missing heartbeats topic do not hold the events back.
  await admin.ensureTopic(definitions.names.events(), definitions.events());
  const events = new EventCollector();
  await events.start(definitions.names);
  const cmd = runTask('echo-agent', 'acme', 'hello without a directory');
  await sendCommand(await commandProducer(), definitions.names, cmd);
  assert.equal((await events.final(cmd.identity.taskId)).body.state, 'TASK_STATE_COMPLETED');
  assert.equal(await admin.topicExists(definitions.names.heartbeats()), false);
});

test('agents registered with a directory wait for it to create their command topic instead of creating it', async () => {
  const prefix = uniquePrefix('topics-registered');
  const definitions = new TopicDefinitions(prefix);
  // A directory that accepts the registration and has not created the topic yet.
  const directory = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.method === 'GET') return void res.writeHead(404).end('{}');
    req.resume().on('end', () => void res.writeHead(201).end('{}'));
  });
  await new Promise<void>((r) => directory.listen(0, '127.0.0.1', () => r()));
  cleanup(async () => void directory.close());
  const admin = new BusAdmin(testKafka('topics-registered'));
  cleanup(() => admin.close());
  let started = false;
  const starting = startAgents(
    {
      ...loadAgentsConfig({
        KAFKA_BROKERS: testRun().brokers.join(','),
        TOPIC_PREFIX: prefix,
        DATABASE_URL: await freshDatabase('topics-registered'),
        AGENTS_RUN: 'echo-agent',
        AGENTS_LEDGER_RETENTION_MS: '0',
        AGENTS_DIRECTORY_URL: `http://127.0.0.1:${(directory.address() as AddressInfo).port}`,
        AGENTS_DIRECTORY_TOKEN: 'demo-acme',
      }),
      AGENTS_PORT: 0,
    },
    sampleAgents,
  ).then((a) => {
    started = true;
    cleanup(() => a.stop());
    return a;
  });
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(started, false, 'the agents wait for the directory');
  assert.equal(await admin.topicExists(definitions.names.commands('echo-agent')), false, 'and do not create the topic');
  const commands = definitions.commands('echo-agent', echoAgent.channel.partitions);
  await admin.ensureTopic(commands.name, commands);
  await starting;
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
