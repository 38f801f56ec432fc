// The bus on a three-node KRaft cluster (scripts/kafka.sh cluster: replication factor 3,
// min.insync.replicas 2, no unclean leader election): the leader of the partition being written and
// consumed is SIGKILLed mid-stream. Every send the producer saw acknowledged (acks=all) is consumed,
// the consumer group carries on under the new leader, and the killed node rejoins the ISR.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { BusAdmin, BusConsumer, BusProducer, createKafka, logLevel } from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { eventually, uniquePrefix } from '../support/infra.js';
import { runCommand } from '../support/bus.js';
import { startPrivateKafkaCluster, type PrivateKafkaCluster } from '../support/private-kafka.js';

let cluster: PrivateKafkaCluster | undefined;
after(() => cluster?.destroy());

test(
  'SIGKILL of the partition leader: every acknowledged command is consumed, the node rejoins the ISR',
  { timeout: 300_000 },
  async () => {
    cluster = await startPrivateKafkaCluster();
    // Connection errors to the killed node are the point of the test, not news: the client stays quiet.
    const kafka = createKafka({ brokers: cluster.brokers, clientId: 'cluster-spec' }, { logLevel: logLevel.NOTHING });
    const prefix = uniquePrefix('cluster');
    // The replication factor comes from configuration, as in the services (KAFKA_REPLICATION_FACTOR).
    const definitions = topicDefinitions({ TOPIC_PREFIX: prefix, EVENTS_TOPIC_PARTITIONS: 1, KAFKA_REPLICATION_FACTOR: 3 });
    const command = definitions.commands('echo', 2);
    const admin = new BusAdmin(kafka);
    const producer = new BusProducer(kafka);
    await admin.ensureTopic(command.name, command);
    const raw = kafka.admin();
    await raw.connect();
    const partitionsOf = async () => (await raw.fetchTopicMetadata({ topics: [command.name] })).topics[0].partitions;
    for (const p of await partitionsOf()) assert.equal(p.replicas.length, 3, `partition ${p.partitionId} has three replicas`);

    const consumed = new Set<string>();
    const consumer = new BusConsumer(kafka, {
      groupId: `${command.name}.workers`,
      topics: [command.name],
      topicDefinitions: definitions,
      fromBeginning: true,
      consumerConfig: { sessionTimeout: 10_000, heartbeatInterval: 1_000, maxWaitTimeInMs: 100 },
    });
    await consumer.start(async (env) => void consumed.add(env.identity.executionId));

    const acknowledged = new Set<string>();
    let n = 0;
    const sendSome = async (count: number) => {
      for (let i = 0; i < count; i++, n++) {
        const cmd = runCommand('acme', `task-${n % 40}`, n);
        try {
          await producer.send(command.name, `acme:task-${n % 40}`, cmd);
          acknowledged.add(cmd.identity.executionId);
        } catch {
          // Not acknowledged during the election: the caller would retry; nothing is promised for it.
        }
      }
    };
    await sendSome(200);
    const leader = (await partitionsOf()).find((p) => p.partitionId === 0)!.leader;
    await cluster.node(leader).kill();
    await sendSome(300);
    await eventually('a new leader of partition 0', async () => {
      const p0 = (await partitionsOf()).find((p) => p.partitionId === 0)!;
      return p0.leader !== leader && p0.leader >= 1;
    });
    await eventually('every acknowledged command consumed', () => [...acknowledged].every((id) => consumed.has(id)), 90_000);
    assert.ok(acknowledged.size >= 400, `most sends acknowledged across the election (${acknowledged.size} of ${n})`);

    await cluster.node(leader).resume();
    await eventually('the killed node back in every ISR', async () => (await partitionsOf()).every((p) => p.isr.includes(leader)), 90_000);
    await eventually('the group committed everything (lag 0 on both partitions)', async () =>
      (await admin.consumerLag(`${command.name}.workers`, [command.name])).every((l) => l.lag === 0),
    );

    await consumer.stop();
    await producer.disconnect();
    await raw.disconnect();
    await admin.close();
  },
);
