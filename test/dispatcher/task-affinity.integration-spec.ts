import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { Task } from '@a2a-js/sdk';
import { ConsumerGroups } from '@mesh/contract';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startReplicaProcess, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';

// Two replicas, B in-process and A a separate process, share the projector group; each names its
// new tasks so that their events land on partitions it projects (TaskAffinity). Which replica
// projected a task shows in who told the others (the projection's NOTIFY names its replica).
const env = await startTestDispatcher('affinity', {}, { EVENTS_TOPIC_PARTITIONS: '6' });
await publishAgents(env.kafka, env.topics, [agentRecord('steps')]);
const worker = await startManualWorker(env.kafka, env.topics, 'steps');
after(() => worker.stop());

// Killed at the end of the spec, as every spawned process.
const { url: urlA } = await startReplicaProcess(env, 'steps');

const admin = env.kafka.admin();
await admin.connect();
after(() => admin.disconnect());
const projector = new ConsumerGroups(env.prefix).dispatcherProjector();
await eventually(
  'both replicas project (the rebalance is over)',
  async () => {
    const [group] = (await admin.describeGroups([projector])).groups;
    return group.state === 'Stable' && group.members.length === 2;
  },
  60000,
  200,
);
// Stable means every member was sent its assignment; each replica hears it a moment later.
await new Promise((r) => setTimeout(r, 2000));

// Who projected each task: the sender named in the projection's notification.
const projectedBy = new Map<string, string>();
const listener = new pg.Client({ connectionString: env.databaseUrl });
await listener.connect();
// The database is dropped with its connections at the end of the file.
listener.on('error', () => undefined);
after(() => listener.end());
listener.on('notification', (n) => {
  const [sender, ids] = (n.payload ?? '').split(' ');
  for (const id of ids?.split(',') ?? []) projectedBy.set(id, sender);
});
await listener.query('LISTEN mesh_task_changes');

test('each replica projects the tasks it accepted', { timeout: 120000 }, async () => {
  const accepted: Record<'A' | 'B', string[]> = { A: [], B: [] };
  const clients = { A: await a2aClient(urlA, 'steps', 'JSONRPC'), B: await a2aClient(env.url, 'steps', 'HTTP+JSON') };
  for (let i = 0; i < 8; i++) {
    for (const replica of ['A', 'B'] as const) {
      const task = (await clients[replica].sendMessage(sendRequest(userMessage(`task ${i}`), { returnImmediately: true }))) as Task;
      accepted[replica].push(task.id);
      await worker.emit(await worker.run(task.id), [{ seq: 0, state: 'WORKING' }]);
    }
  }
  const all = [...accepted.A, ...accepted.B];
  await eventually('every task projected', () => all.every((id) => projectedBy.has(id)), 60000);
  const senders = (ids: string[]) => new Set(ids.map((id) => projectedBy.get(id)));
  assert.equal(senders(accepted.A).size, 1, "A's tasks were projected by one replica");
  assert.equal(senders(accepted.B).size, 1, "B's tasks were projected by one replica");
  assert.notDeepEqual(senders(accepted.A), senders(accepted.B), 'by the replica that accepted them');
});
