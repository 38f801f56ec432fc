import { test } from 'node:test';
import assert from 'node:assert/strict';
import { childTaskId, encodeEnvelope, Envelopes, newId, type TaskRunCommand } from '@mesh/contract';
import { eventually, sql } from '../support/infra.js';
import { startTestDispatcher, type DispatcherEnv } from '../support/dispatcher-harness.js';
import { delegateFrom, setMaxMessageBytes, startDelegationPair } from '../support/delegating-parent.js';
import { jsonMessage, submitTask } from '../support/a2a-fixtures.js';

// Commands the platform builds itself obey the topic's limit too: a delegated child's first
// message, and a parent's resumed turn carrying its children's outcomes.
const env: DispatcherEnv = await startTestDispatcher('delegation-bounds', {}, { OUTBOX_LIMITS_REFRESH_MS: '200' });
const { boss, kid, producer, delegation } = await startDelegationPair(env);

const send = (agent: string, text: string) => submitTask(env.url, agent, text);

/** Lowers a command topic's limit and waits until the dispatcher refuses a message over it at accept. */
async function lowerLimit(agent: string, bytes: number): Promise<void> {
  await send(agent, 'the limit is read on first use');
  await setMaxMessageBytes(env.kafka, env.topics.commands(agent), bytes);
  await eventually(`the ${agent} limit read`, async () => {
    const res = await fetch(`${env.url}/a2a/${agent}`, {
      method: 'POST',
      headers: { authorization: 'Bearer demo-acme', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: jsonMessage('p'.repeat(bytes)) } }),
    });
    return ((await res.json()) as { error?: { code: number } }).error?.code === -32602;
  });
}

/** Completes a child's turn with an artifact of `bytes` characters (a final event, as a worker's). */
async function complete(child: string, bytes: number): Promise<void> {
  const run: TaskRunCommand = await kid.run(child);
  const events = [
    Envelopes.artifact(run.identity, {
      seq: 1,
      artifact: { artifactId: newId(), name: 'out', parts: [{ text: 'a'.repeat(bytes) }] },
      lastChunk: true,
    }),
    Envelopes.status(run.identity, { seq: 2, state: 'TASK_STATE_COMPLETED', final: true }),
  ];
  await producer.send({ topic: env.topics.events(), acks: -1, messages: events.map((e) => ({ key: child, ...encodeEnvelope(e) })) });
}

test("a delegated child whose first message its agent's topic would refuse is not started: rejected with the reason", async () => {
  await lowerLimit('kid', 6_000);
  const parent = await send('boss', 'delegate large asks');
  const run: TaskRunCommand = await boss.run(parent);
  // One small ask and one over the limit, reported as a worker's final event.
  const asks = [
    { step: 0, agentId: 'kid', parts: [{ text: 'small' }] },
    { step: 1, agentId: 'kid', parts: [{ text: 'b'.repeat(8_000) }] },
  ];
  const children = asks.map((a) => ({ ...a, taskId: childTaskId(run.identity.executionId, a.step, a) }));
  const events = [
    Envelopes.status(run.identity, { seq: 1, state: 'TASK_STATE_WORKING', final: true, delegation: { join: 'all', children } }),
  ];
  await producer.send({ topic: env.topics.events(), acks: -1, messages: events.map((e) => ({ key: parent, ...encodeEnvelope(e) })) });
  const wait = await eventually('the wait recorded', async () => {
    const rows = await sql<{ children: Array<{ step: number; refused: string | null }> }>(
      env.databaseUrl,
      `SELECT children FROM dispatcher.delegations WHERE parent_task_id = $1`,
      [parent],
    );
    return rows[0];
  });
  assert.equal(wait.children.find((c) => c.step === 0)?.refused, null);
  assert.match(wait.children.find((c) => c.step === 1)?.refused ?? '', /larger than the agent's channel accepts/);
  const created = await sql(env.databaseUrl, `SELECT 1 FROM dispatcher.tasks WHERE id = $1`, [children[1].taskId]);
  assert.equal(created.length, 0, 'no task for the refused child');
});

test("a parent's resumed turn carries its children's outcomes only as far as its command fits: the rest truncated", async () => {
  await lowerLimit('boss', 30_000);
  const parent = await send('boss', 'delegate to three');
  const { children } = await delegateFrom(delegation, parent, 3);
  // Each artifact fits alone; the three together would not.
  for (const c of children) await complete(c, 12_000);
  const resumed = await eventually('the parent resumed', () =>
    boss.commands.find((c): c is TaskRunCommand => c.kind === 'task.run' && c.identity.taskId === parent && c.body.turn === 2),
  );
  const results = (resumed.body.message.parts as Array<{ data?: { children: Array<{ truncated?: boolean; artifacts: unknown[] }> } }>).find(
    (p) => p.data,
  )!.data!;
  assert.equal(results.children.length, 3);
  assert.ok(
    results.children.some((c) => c.truncated),
    'some children come truncated',
  );
  assert.ok(Buffer.byteLength(JSON.stringify(resumed)) < 30_000);
});

test("a parent whose children's outcomes do not fit its command even without artifacts fails, saying why", async () => {
  // A small run command fits; sixteen children's outcomes, even bare, do not.
  await lowerLimit('boss', 3_500);
  const parent = await send('boss', 'delegate to sixteen');
  const { children } = await delegateFrom(delegation, parent, 16);
  for (const c of children) await complete(c, 10);
  const failed = await eventually('the parent failed', async () => {
    const [row] = await sql<{ state: string; task: { status: { message: { metadata: Record<string, string> } } } }>(
      env.databaseUrl,
      `SELECT state, task FROM dispatcher.tasks WHERE id = $1`,
      [parent],
    );
    return row?.state === 'TASK_STATE_FAILED' ? row : undefined;
  });
  assert.equal(failed.task.status.message.metadata['mesh/reason'], 'DELEGATION_RESULTS_TOO_LARGE');
  assert.ok(
    !boss.commands.some((c) => c.kind === 'task.run' && c.identity.taskId === parent && c.body.turn === 2),
    'no resumed turn was sent',
  );
  const [wait] = await sql<{ resumed_at: Date | null }>(
    env.databaseUrl,
    `SELECT resumed_at FROM dispatcher.delegations WHERE parent_task_id = $1`,
    [parent],
  );
  assert.ok(wait.resumed_at, 'the wait is closed');
});
