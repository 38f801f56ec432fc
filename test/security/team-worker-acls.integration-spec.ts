// A team's worker in team mode under a team principal with exactly the team ACLs (docs/bus.md,
// "Team events"): it starts without creating a topic (but its dead letters) or reading a topic config it may not, runs its
// agent's task to the end through the dispatcher (signed events on the team events topic), beats
// on the heartbeats topic naming its principal, and the broker keeps it off the platform's events topic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import kafkajs from 'kafkajs';
import { Connection, ScramMechanisms, alterUserScramCredentialsV0, type SASLMechanismValue } from '@platformatic/kafka';
import { TaskState, type Task } from '@a2a-js/sdk';
import { runCli } from '@mesh/app-cli';
import { createKafka } from '@mesh/bus';
import { ConsumerGroups, encodeEnvelope, Envelopes, TopicNames } from '@mesh/contract';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';
import { eventually, testRun } from '../support/infra.js';

const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } = kafkajs;
const OPS_TOKEN = 'team-acls-ops-token';
const AGENT = 'echo-agent';

const env = await startTestDispatcher('team-acls', {}, { DISPATCHER_OPS_TOKEN: OPS_TOKEN });
await publishAgents(env.kafka, env.topics, [agentRecord(AGENT)]);

// The team's principal: a SCRAM-SHA-512 user made as the admin over AlterUserScramCredentials.
const user = `team-acls-${Date.now()}`;
const password = randomBytes(24).toString('base64url');
{
  const [host, port] = testRun().brokers[0]!.split(':');
  const admin = new Connection('team-acls-spec', {
    sasl: {
      mechanism: (process.env.KAFKA_SASL_MECHANISM ?? 'scram-sha-512').toUpperCase() as SASLMechanismValue,
      username: process.env.KAFKA_USERNAME!,
      password: process.env.KAFKA_PASSWORD!,
    },
  });
  await admin.connect(host!, Number(port));
  const salt = randomBytes(32);
  await alterUserScramCredentialsV0.api.async(
    admin,
    [],
    [
      {
        name: user,
        mechanism: ScramMechanisms.SCRAM_SHA_512,
        iterations: 8192,
        salt,
        saltedPassword: pbkdf2Sync(password, salt, 8192, 64, 'sha512'),
      },
    ],
  );
  await admin.close();
}
const topics = new TopicNames(env.prefix);
const groups = new ConsumerGroups(env.prefix);
const grants: Array<[keyof typeof AclResourceTypes, string, Array<keyof typeof AclOperationTypes>]> = [
  ['TOPIC', topics.commands(AGENT), ['READ', 'DESCRIBE']],
  ['GROUP', groups.agentWorkers(AGENT), ['READ', 'DESCRIBE']],
  ['TOPIC', topics.deadLetters(topics.commands(AGENT)), ['CREATE', 'WRITE', 'READ', 'DESCRIBE']],
  ['TOPIC', topics.teamEvents(), ['WRITE', 'DESCRIBE']],
  ['TOPIC', topics.heartbeats(), ['WRITE', 'DESCRIBE']],
];
{
  const admin = env.kafka.admin();
  await admin.connect();
  await admin.createAcls({
    acl: grants.flatMap(([type, name, operations]) =>
      operations.map((op) => ({
        resourceType: AclResourceTypes[type],
        resourceName: name,
        resourcePatternType: ResourcePatternTypes.LITERAL,
        principal: `User:${user}`,
        host: '*',
        operation: AclOperationTypes[op],
        permissionType: AclPermissionTypes.ALLOW,
      })),
    ),
  });
  await admin.disconnect();
}
const teamSasl = { KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_USERNAME: user, KAFKA_PASSWORD: password };

// The binding, then the worker as the team's principal.
const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
const res = await fetch(`${env.url}/ops/teams/acls`, {
  method: 'PUT',
  headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
  body: JSON.stringify({ tenant: 'acme', agents: [AGENT], eventKeys: { keys: [{ ...(await exportJWK(publicKey)), kid: 'acls-key' }] } }),
});
assert.equal(res.status, 200, await res.text());
const topicsBefore = (await listTopics()).filter((t) => t.startsWith(env.prefix));
await startTestAgents(env.prefix, env.databaseUrl, {
  ...teamSasl,
  AGENTS_RUN: AGENT,
  AGENTS_EVENT_KEY: JSON.stringify({ ...(await exportJWK(privateKey)), kid: 'acls-key' }),
  AGENTS_HEARTBEAT_INTERVAL_MS: '500',
  EVENTS_TOPIC_PARTITIONS: '3',
});

async function listTopics(): Promise<string[]> {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    return await admin.listTopics();
  } finally {
    await admin.disconnect();
  }
}

test('within the team ACLs the worker runs its task to the end, beats, and creates no topic but its dead letters', async () => {
  const client = await eventually('the card', () => a2aClient(env.url, AGENT, 'JSONRPC').catch(() => undefined));
  const task = (await client.sendMessage(sendRequest(userMessage('within the acls')))) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status));
  // Its consumer makes its own dead-letter topic at start (its ACLs allow that one); nothing else.
  const made = (await listTopics()).filter((t) => t.startsWith(env.prefix) && !topicsBefore.includes(t));
  assert.deepEqual(made, [topics.deadLetters(topics.commands(AGENT))], 'no topic created but its dead letters');
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    const beats = await eventually('heartbeats', async () => {
      const n = (await admin.fetchTopicOffsets(topics.heartbeats())).reduce((sum, p) => sum + Number(p.high), 0);
      return n > 0 ? n : undefined;
    });
    assert.ok(beats > 0);
  } finally {
    await admin.disconnect();
  }
  // Operators see as whom it consumes: `mesh workers` names the team's principal from its heartbeats.
  const out: string[] = [];
  await runCli(['--json', '--prefix', env.prefix, '--directory-url', 'http://127.0.0.1:9', 'workers', AGENT], {
    out: (l) => out.push(l),
    err: () => undefined,
    env: { KAFKA_BROKERS: testRun().brokers.join(',') },
  });
  const workers = (JSON.parse(out.join('\n')) as { workers: Array<{ principal: string | null; agents: string[] }> }).workers;
  assert.deepEqual(
    workers.map((w) => [w.principal, w.agents]),
    [[user, [AGENT]]],
  );
  assert.ok(!out.join('\n').includes(password), 'never its password');
});

test("the team's principal may not write the platform's events topic", async () => {
  const team = createKafka({
    brokers: testRun().brokers,
    clientId: 'team-acls-forger',
    sasl: { mechanism: 'scram-sha-512', username: user, password },
  });
  const producer = team.producer({ retry: { retries: 0 } });
  await producer.connect();
  try {
    const identity = {
      tenant: 'acme',
      agentId: AGENT,
      taskId: 't',
      contextId: 'c',
      messageId: 'm',
      executionId: 'acme:t:1',
      subject: 's',
      actor: 's',
    };
    const wire = encodeEnvelope(Envelopes.status(identity, { seq: 1, state: 'TASK_STATE_WORKING', final: false }));
    await assert.rejects(
      producer.send({ topic: topics.events(), messages: [{ key: 't', value: wire.value, headers: wire.headers }] }),
      /authoriz/i,
    );
  } finally {
    await producer.disconnect().catch(() => undefined);
  }
});
