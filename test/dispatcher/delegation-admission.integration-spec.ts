import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, sql } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher, type DispatcherEnv } from '../support/dispatcher-harness.js';
import { startManualWorker } from '../support/manual-worker.js';
import { delegateFrom } from '../support/delegating-parent.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { metricSample } from '../support/metrics.js';

// Children a task delegates are the tenant's work like any other: they pass its admission.
const env: DispatcherEnv = await startTestDispatcher(
  'delegation-admission',
  {},
  { DISPATCHER_TENANT_RATE_PER_S: '1', DISPATCHER_TENANT_BURST: '4' },
);
await publishAgents(env.kafka, env.topics, [agentRecord('boss'), agentRecord('kid')]);
const boss = await startManualWorker(env.kafka, env.topics, 'boss');
const kid = await startManualWorker(env.kafka, env.topics, 'kid');
const producer = env.kafka.producer();
await producer.connect();
after(async () => {
  await Promise.all([boss.stop(), kid.stop(), producer.disconnect()]);
});
await eventually('cards served', async () => (await fetch(`${env.url}/a2a/kid/.well-known/agent-card.json`)).ok);

test("a delegating turn starts no more children than the tenant's rate admits; the others are refused with the reason", async () => {
  const res = await fetch(`${env.url}/a2a/boss`, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-acme', 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: jsonMessage('delegate'), configuration: { returnImmediately: true } },
    }),
  });
  const parent = ((await res.json()) as { result: { task: { id: string } } }).result.task.id;
  // The parent's own send took one token of the burst of 4: three children start, five are refused.
  const { children } = await delegateFrom(
    { databaseUrl: env.databaseUrl, topics: env.topics, producer, parent: boss, child: 'kid' },
    parent,
    8,
  );
  const created = await sql<{ id: string }>(env.databaseUrl, `SELECT id FROM dispatcher.tasks WHERE parent_task_id = $1`, [parent]);
  assert.ok(created.length <= 4 && created.length >= 2, `${created.length} children started`);
  const [wait] = await sql<{ children: Array<{ taskId: string; refused: string | null }> }>(
    env.databaseUrl,
    `SELECT children FROM dispatcher.delegations WHERE parent_task_id = $1`,
    [parent],
  );
  const refused = wait.children.filter((c) => c.refused);
  assert.equal(refused.length + created.length, children.length);
  for (const c of refused) assert.match(c.refused!, /admission refused it.*requests\/s/);
  assert.ok(((await metricSample(env.url, 'mesh_admission_refusals_total', { reason: 'RATE_LIMITED' })) ?? 0) >= refused.length);
});
