import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TaskRunCommand } from '@mesh/contract';
import { eventually, sql } from '../support/infra.js';
import { startTestDispatcher, type DispatcherEnv } from '../support/dispatcher-harness.js';
import { delegateFrom, startDelegationPair } from '../support/delegating-parent.js';
import { submitTask } from '../support/a2a-fixtures.js';
import { metricSample } from '../support/metrics.js';

// Children a task delegates are the tenant's work like any other: they pass its admission, and
// wait for it as a caller retrying after Retry-After would.
const env: DispatcherEnv = await startTestDispatcher(
  'delegation-admission',
  {},
  { DISPATCHER_TENANT_RATE_PER_S: '1', DISPATCHER_TENANT_BURST: '4', DISPATCHER_DELEGATION_SWEEP_MS: '300' },
);
const { boss, delegation } = await startDelegationPair(env);

type Child = { step: number; taskId: string; refused: string | null; deferred?: string | null };
const waitOf = async (parent: string) =>
  (await sql<{ children: Child[] }>(env.databaseUrl, `SELECT children FROM dispatcher.delegations WHERE parent_task_id = $1`, [parent]))[0];
const childrenOf = async (parent: string) =>
  (await sql(env.databaseUrl, `SELECT 1 FROM dispatcher.tasks WHERE parent_task_id = $1`, [parent])).length;

test("children past the tenant's rate are not started at once: they wait and start as its rate lets them", async () => {
  const parent = await submitTask(env.url, 'boss', 'delegate');
  // The parent's own send took one token of the burst of 4: three children start, five wait.
  const { children } = await delegateFrom(delegation, parent, 8);
  const first = await childrenOf(parent);
  assert.ok(first >= 2 && first <= 4, `${first} children started at once`);
  const wait = await waitOf(parent);
  const deferred = wait.children.filter((c) => c.deferred);
  assert.equal(deferred.length + first, children.length);
  for (const c of deferred) assert.match(c.deferred!, /requests\/s/);
  assert.ok(((await metricSample(env.url, 'mesh_admission_refusals_total', { reason: 'RATE_LIMITED' })) ?? 0) >= deferred.length);
  // One a second, at the tenant's rate, until every child runs; none was refused.
  await eventually('every child started', async () => (await childrenOf(parent)) === children.length, 30_000);
  assert.ok((await waitOf(parent)).children.every((c) => !c.refused && !c.deferred));
});

test('a child still waiting for admission when its wait ends comes back rejected, with the reason', async () => {
  // Another tenant (its own bucket, which the children drain).
  const parent = await submitTask(env.url, 'boss', 'delegate with a short wait', 'demo-globex');
  await delegateFrom(delegation, parent, 8, 1_500);
  const resumed = await eventually(
    'the parent resumed at its deadline',
    () => boss.commands.find((c): c is TaskRunCommand => c.kind === 'task.run' && c.identity.taskId === parent && c.body.turn === 2),
    30_000,
  );
  const parts = resumed.body.message.parts as Array<{
    data?: { reason: string; children: Array<{ state: string; message?: { parts: Array<{ text: string }> } }> };
  }>;
  const results = parts.find((p) => p.data)!.data!;
  assert.equal(results.reason, 'deadline');
  const rejected = results.children.filter((c) => c.state === 'TASK_STATE_REJECTED');
  assert.ok(rejected.length > 0, JSON.stringify(results.children.map((c) => c.state)));
  for (const c of rejected)
    assert.match(c.message!.parts[0].text, /not started before the (delegation's deadline|wait ended).*requests\/s/);
});
