// A hostile team worker on the broker: with team alpha's credentials (from `mesh teams create`), a
// kafkajs client tries to reach what belongs to team beta or to the platform, and is refused by the
// broker's ACLs; after each refusal the admin sees nothing changed. Positive controls: alpha runs
// its own agent (its command topic with its worker group) and writes the team events and heartbeats.
// (The dispatcher's side — unsigned or foreign-key events on the team events topic — is another suite.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createKafka, AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes, type Kafka } from '@mesh/bus';
import { ConsumerGroups, TopicNames } from '@mesh/contract';
import { teamEventsTopic } from '@mesh/app-cli';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';
import { createTeam, envFolder, teamKafka, uniqueTeamName } from '../support/teams.js';

const prefix = uniquePrefix('hostile-worker');
const topics = new TopicNames(prefix);
const groups = new ConsumerGroups(prefix);
const T = {
  alphaCommands: topics.commands('a1'),
  betaCommands: topics.commands('b1'),
  events: topics.events(),
  teamEvents: teamEventsTopic(prefix),
  heartbeats: topics.heartbeats(),
};

const adminKafka = createKafka({ brokers: testRun().brokers, clientId: 'hostile-admin' });
const admin = adminKafka.admin();
await admin.connect();
after(() => admin.disconnect());
await admin.createTopics({ topics: Object.values(T).map((topic) => ({ topic, numPartitions: 1 })), waitForLeaders: true });
// Something to steal on beta's command topic and on the team events topic.
const seed = adminKafka.producer();
await seed.connect();
await seed.send({ topic: T.betaCommands, messages: [{ key: 'task-1', value: 'beta command' }] });
await seed.send({ topic: T.teamEvents, messages: [{ key: 'task-2', value: 'a team event' }] });
await seed.disconnect();

const dir = await envFolder();
const alpha = await createTeam(uniqueTeamName('alpha'), { tenant: 'acme', agents: ['a1'], prefix, dir });
const beta = await createTeam(uniqueTeamName('beta'), { tenant: 'globex', agents: ['b1'], prefix, dir });

/** Every log entry alpha's client wrote (kafkajs swallows some refusals into its debug log). */
const log: Array<{ message: string; error?: unknown }> = [];
const hostile: Kafka = teamKafka(alpha.env, 'hostile-worker', (entry) => log.push(entry));

/** The broker's error type behind a kafkajs error (some wrap it as their cause). */
const typeOf = (err: unknown): string | undefined => {
  const e = (err ?? {}) as { type?: string; cause?: { type?: string }; errors?: Array<{ type?: string }> };
  return e.type ?? e.cause?.type ?? e.errors?.[0]?.type;
};

/** End offset of each topic, as the admin reads it. */
async function ends(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const topic of Object.values(T)) out[topic] = (await admin.fetchTopicOffsets(topic)).map((p) => p.high).join(',');
  return out;
}

/** Group `groupId`'s committed offsets on `topic`, as the admin reads them (retried while a fresh broker elects the group's coordinator). */
const committed = async (groupId: string, topic: string) =>
  (
    await eventually(`the committed offsets of ${groupId}`, async () => ({
      offsets: (await admin.fetchOffsets({ groupId, topics: [topic] })).flatMap((t) => t.partitions.map((p) => p.offset)).join(','),
    }))
  ).offsets;

/** Alpha consumes `topic` in `groupId` until it crashes (the refusal), reads a record, or `ms` pass. */
async function consume(groupId: string, topic: string, ms = 15_000): Promise<{ crashed?: unknown; received: string[] }> {
  const consumer = hostile.consumer({ groupId, retry: { retries: 1 } });
  const received: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    return await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ received }), ms);
      consumer.on(consumer.events.CRASH, (e) => {
        clearTimeout(timer);
        resolve({ crashed: e.payload.error, received });
      });
      consumer
        .run({
          eachMessage: async ({ message }) => {
            received.push(message.value?.toString() ?? '');
            clearTimeout(timer);
            resolve({ received });
          },
        })
        .catch((err: unknown) => {
          clearTimeout(timer);
          resolve({ crashed: err, received });
        });
    });
  } catch (err) {
    return { crashed: err, received };
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}

async function produce(topic: string): Promise<void> {
  const producer = hostile.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic, messages: [{ key: 'x', value: `from alpha to ${topic}` }] });
  } finally {
    await producer.disconnect();
  }
}

test("alpha cannot consume beta's command topic: TOPIC_AUTHORIZATION_FAILED, and beta's group did not move", async () => {
  const before = await committed(groups.agentWorkers('b1'), T.betaCommands);
  const r = await consume(groups.agentWorkers('a1'), T.betaCommands);
  assert.deepEqual(r.received, []);
  assert.equal((r.crashed as Error)?.name, 'KafkaJSProtocolError');
  assert.equal(typeOf(r.crashed), 'TOPIC_AUTHORIZATION_FAILED');
  assert.equal(await committed(groups.agentWorkers('b1'), T.betaCommands), before);
});

test("alpha cannot join beta's worker group, even on its own topic: GROUP_AUTHORIZATION_FAILED", async () => {
  log.length = 0;
  const r = await consume(groups.agentWorkers('b1'), T.alphaCommands);
  assert.deepEqual(r.received, []);
  // kafkajs looks for the coordinator on each broker and reports only that none answered; the
  // broker's refusal is in its log.
  assert.equal((r.crashed as Error)?.name, 'KafkaJSGroupCoordinatorNotFound');
  assert.ok(
    log.some((l) => typeOf(l.error) === 'GROUP_AUTHORIZATION_FAILED'),
    `no GROUP_AUTHORIZATION_FAILED in ${JSON.stringify(log.map((l) => l.message))}`,
  );
  const [group] = (await admin.describeGroups([groups.agentWorkers('b1')])).groups;
  assert.deepEqual(group?.members, []);
});

test("alpha cannot write the platform events topic nor beta's commands: TOPIC_AUTHORIZATION_FAILED, nothing appears", async () => {
  for (const topic of [T.events, T.betaCommands]) {
    const before = await ends();
    const err = await produce(topic).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err, `alpha wrote to ${topic}`);
    assert.equal(typeOf(err), 'TOPIC_AUTHORIZATION_FAILED', `${topic}: ${String(err)}`);
    assert.deepEqual(await ends(), before, `a record appeared (${topic})`);
  }
});

test('alpha cannot read the team events topic (it only writes there)', async () => {
  const r = await consume(groups.agentWorkers('a1'), T.teamEvents);
  assert.deepEqual(r.received, [], 'alpha read a team event');
  assert.ok(r.crashed, 'the consumer was refused');
  assert.equal(typeOf(r.crashed), 'TOPIC_AUTHORIZATION_FAILED', String(r.crashed));
});

test('alpha cannot create topics nor see or change ACLs', async () => {
  const a = hostile.admin();
  await a.connect();
  try {
    const evil = `${prefix}mesh.agent.b1.commands.evil`;
    const created = await a.createTopics({ topics: [{ topic: evil, numPartitions: 1 }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal((created as Error)?.name, 'KafkaJSAggregateError');
    assert.equal(typeOf(created), 'TOPIC_AUTHORIZATION_FAILED');
    assert.equal((await admin.listTopics()).includes(evil), false);

    const aclsBefore = await admin.describeAcls({
      resourceType: AclResourceTypes.ANY,
      resourcePatternType: ResourcePatternTypes.ANY,
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    });
    const any = {
      resourceType: AclResourceTypes.ANY,
      resourcePatternType: ResourcePatternTypes.ANY,
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    };
    const grantSelf = {
      resourceType: AclResourceTypes.TOPIC,
      resourceName: T.events,
      resourcePatternType: ResourcePatternTypes.LITERAL,
      principal: `User:${alpha.env.KAFKA_USERNAME}`,
      host: '*',
      operation: AclOperationTypes.WRITE,
      permissionType: AclPermissionTypes.ALLOW,
    };
    for (const [what, attempt] of [
      ['describeAcls', () => a.describeAcls(any)],
      ['createAcls', () => a.createAcls({ acl: [grantSelf] })],
      ['deleteAcls', () => a.deleteAcls({ filters: [{ ...any, principal: `User:${beta.env.KAFKA_USERNAME}` }] })],
    ] as const) {
      const err = await (attempt as () => Promise<unknown>)().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.equal(typeOf(err), 'CLUSTER_AUTHORIZATION_FAILED', `${what}: ${String(err)}`);
    }
    const aclsAfter = await admin.describeAcls(any);
    assert.deepEqual(aclsAfter.resources, aclsBefore.resources, 'the ACLs changed');
  } finally {
    await a.disconnect();
  }
});

test('control: alpha runs its own agent (its command topic, group agents.a1), writes team events and heartbeats, and its dead letters', async () => {
  const p = adminKafka.producer();
  await p.connect();
  await p.send({ topic: T.alphaCommands, messages: [{ key: 'task-3', value: 'alpha command' }] });
  await p.disconnect();
  const r = await consume(groups.agentWorkers('a1'), T.alphaCommands);
  assert.equal(r.crashed, undefined, String(r.crashed));
  assert.deepEqual(r.received, ['alpha command']);
  for (const topic of [T.teamEvents, T.heartbeats]) {
    const before = BigInt((await ends())[topic]!);
    await produce(topic);
    assert.equal(BigInt((await ends())[topic]!), before + 1n, topic);
  }
  // Its bus consumer creates the dead-letter topic of its command topic on the first dead letter.
  const dlq = topics.deadLetters(T.alphaCommands);
  const a = hostile.admin();
  await a.connect();
  try {
    await a.createTopics({ topics: [{ topic: dlq, numPartitions: 1 }], waitForLeaders: true });
  } finally {
    await a.disconnect();
  }
  assert.ok((await admin.listTopics()).includes(dlq));
  await produce(dlq);
  assert.equal((await admin.fetchTopicOffsets(dlq))[0]!.high, '1');
});
