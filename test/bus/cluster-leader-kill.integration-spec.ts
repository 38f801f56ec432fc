// The bus on a three-node KRaft cluster (scripts/kafka.sh cluster: replication factor 3,
// min.insync.replicas 2, no unclean leader election): the leader of the partition being written and
// consumed is SIGKILLed mid-stream. Every send the producer saw acknowledged (acks=all) is consumed,
// the consumer group carries on under the new leader, and the killed node rejoins the ISR. Then the
// leader move kafkajs gets wrong: a partition's leadership moves to a broker that already answered
// for the same request; every record is still written, in order.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Partitioners } from 'kafkajs';
import { BusAdmin, BusConsumer, BusProducer, createKafka, logLevel } from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { eventually, uniquePrefix } from '../support/infra.js';
import { runCommand } from '../support/bus.js';
import { startPrivateKafkaCluster, type PrivateKafkaCluster } from '../support/private-kafka.js';

let cluster: PrivateKafkaCluster;
before(async () => {
  cluster = await startPrivateKafkaCluster();
});
after(() => cluster?.destroy());

test(
  'SIGKILL of the partition leader: every acknowledged command is consumed, the node rejoins the ISR',
  { timeout: 300_000 },
  async () => {
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

test(
  'a partition whose leadership moves to a broker that answered for the same batch: its records are sent again, in order',
  { timeout: 300_000 },
  async () => {
    const kafka = createKafka({ brokers: cluster.brokers, clientId: 'cluster-move-spec' }, { logLevel: logLevel.NOTHING });
    const topic = `${uniquePrefix('cluster-move')}.events`;
    const raw = kafka.admin();
    await raw.connect();
    // Partition 0 led by node 1, partition 1 by node 2.
    await raw.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic,
          replicaAssignment: [
            { partition: 0, replicas: [1, 2, 3] },
            { partition: 1, replicas: [2, 3, 1] },
          ],
        },
      ],
    });
    const leaderOf = async (partition: number) =>
      (await raw.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.find((p) => p.partitionId === partition)!.leader;
    await eventually('node 1 leads partition 0', async () => (await leaderOf(0)) === 1);

    const partitioner = Partitioners.DefaultPartitioner();
    const partitionOf = (key: string) =>
      partitioner({
        topic,
        partitionMetadata: [0, 1].map((partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [], isr: [] })),
        message: { key, value: null },
      });
    const keys = Array.from({ length: 40 }, (_, i) => `task-${i}`);
    const sent: Record<number, string[]> = { 0: [], 1: [] };
    const send = (producer: BusProducer, key: string, n: number) => {
      sent[partitionOf(key)].push(`${key}#${n}`);
      return producer.sendRecord(topic, key, `${key}#${n}`);
    };
    assert.ok(keys.some((k) => partitionOf(k) === 0) && keys.some((k) => partitionOf(k) === 1), 'keys on both partitions');

    // The producer learns the leaders (and connects to both) while node 1 is up.
    const producer = new BusProducer(kafka, { lingerMs: 50 });
    await Promise.all(keys.map((k) => send(producer, k, 0)));
    // Partition 0 moves to node 2 (node 1 is no longer a replica) behind the producer's back.
    await raw.alterPartitionReassignments({ topics: [{ topic, partitionAssignment: [{ partition: 0, replicas: [2, 3] }] }] });
    await eventually('node 2 leads partition 0', async () => (await leaderOf(0)) === 2, 60_000);

    // One batch over both partitions with the producer's stale view (partition 0 on node 1): node 2
    // answers for partition 1, node 1 answers "not the leader", the retry finds partition 0 on node 2
    // — which kafkajs then skips, because node 2 has answered already.
    await Promise.all(keys.map((k) => send(producer, k, 1)));
    await Promise.all(keys.map((k) => send(producer, k, 2)));

    const consumer = kafka.consumer({ groupId: `${topic}.check`, maxWaitTimeInMs: 100 });
    const read: Record<number, string[]> = { 0: [], 1: [] };
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ partition, message }) => void read[partition].push(String(message.value)) });
    // Read until everything is back (or 20 s passed: then the comparison below names what is missing).
    await eventually('every record read back', () => read[0].length + read[1].length >= sent[0].length + sent[1].length, 20_000).catch(
      () => undefined,
    );
    await consumer.disconnect();
    // Each partition holds exactly what was sent to it, once, in the order of the sends.
    assert.deepEqual(read[0], sent[0]);
    assert.deepEqual(read[1], sent[1]);
    assert.ok(producer.counters.unacknowledged > 0, 'the leader move left records without an acknowledgement, and they were sent again');

    await producer.disconnect();
    await raw.disconnect();
  },
);
