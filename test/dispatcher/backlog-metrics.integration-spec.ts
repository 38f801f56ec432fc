import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';

// The dispatcher's open /metrics reports every registered agent's backlog: a fixed number of series
// per agent (never one per partition), a private agent under an alias (never its id), and none for
// an agent once it is retired.
const env = await startTestDispatcher('backlog-metrics', {}, { DISPATCHER_METRICS_INTERVAL_MS: '200' });
const PARTITIONS = 16;
const admin = env.kafka.admin();
await admin.connect();
// The command topics and their dead-letter topics, as registration and the workers create them.
await admin.createTopics({
  topics: ['wide-public', 'wide-secret'].flatMap((id) => [
    { topic: env.topics.commands(id), numPartitions: PARTITIONS },
    { topic: env.topics.deadLetters(env.topics.commands(id)), numPartitions: 1 },
  ]),
  waitForLeaders: true,
});
await admin.disconnect();
const secret = agentRecord('wide-secret', { tenant: 'globex', visibility: 'private' });
await publishAgents(env.kafka, env.topics, [agentRecord('wide-public'), secret]);

const scrape = async () => (await fetch(`${env.url}/metrics`)).text();
const lines = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`));
const alias = `private-${createHash('sha256').update('wide-secret').digest('hex').slice(0, 12)}`;

test('backlog series: one per agent and metric whatever its partitions, a private agent never named, all gone once retired', async () => {
  const text = await eventually('both agents reported', async () => {
    const t = await scrape();
    return t.includes('mesh_agent_backlog{agent="wide-public"}') && t.includes(`mesh_agent_backlog{agent="${alias}"}`) ? t : undefined;
  });
  assert.doesNotMatch(text, /wide-secret/, 'the private agent id is on no series');
  for (const name of ['mesh_consumer_lag', 'mesh_agent_backlog', 'mesh_dead_letter_depth']) {
    assert.equal(lines(text, name).filter((l) => l.includes('wide-public')).length, 1, `${name}: one series for ${PARTITIONS} partitions`);
    assert.equal(lines(text, name).filter((l) => l.includes(alias)).length, 1, `${name}: one aliased series`);
  }
  assert.equal(lines(text, 'mesh_consumer_lag').filter((l) => l.includes('partition=')).length, 0);

  await publishAgents(env.kafka, env.topics, [
    agentRecord('wide-public', { retired: true, version: 2 }),
    { ...secret, retired: true, version: 2 },
  ]);
  const after = await eventually('retired agents dropped', async () => {
    const t = await scrape();
    return t.includes('wide-public') || t.includes(alias) ? undefined : t;
  });
  assert.doesNotMatch(after, /wide-public|wide-secret/);
});
