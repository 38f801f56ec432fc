import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { eventually, sql } from '../support/infra.js';
import { startTestDispatcher, type DispatcherEnv } from '../support/dispatcher-harness.js';
import { delegateFrom, startDelegationPair } from '../support/delegating-parent.js';
import { jsonMessage } from '../support/a2a-fixtures.js';

// CancelTask of a delegating tree racing with writers of its tasks: every live child ends with
// the parent and none settles after the parent's cancel, and a lock race is retried inside.
const env: DispatcherEnv = await startTestDispatcher('tree-cancel');
const { kid, delegation } = await startDelegationPair(env);

/** A JSON-RPC answer as this spec reads it: a task (SendMessage's under `task`) or an error. */
interface RpcAnswer {
  result?: { task?: { id: string }; status?: { state: string } };
  error?: { code: number; message: string };
}

async function rpc(agent: string, method: string, params: Record<string, unknown>): Promise<RpcAnswer> {
  const res = await fetch(`${env.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-acme', 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as RpcAnswer;
}

/** A parent task of `boss` that delegated `n` children to `kid`, all SUBMITTED; their ids sorted. */
async function tree(n: number): Promise<{ parent: string; children: string[] }> {
  const sent = await rpc('boss', 'SendMessage', { message: jsonMessage('delegate'), configuration: { returnImmediately: true } });
  return delegateFrom(delegation, sent.result!.task!.id, n);
}

/** A connection of the test's own: a writer of the tree that holds row locks the test chooses. */
async function writer(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: env.databaseUrl });
  await c.connect();
  await c.query('BEGIN');
  return c;
}

const row = async (id: string) =>
  (
    await sql<{ state: string; ts: Date }>(env.databaseUrl, `SELECT state, status_timestamp AS ts FROM dispatcher.tasks WHERE id = $1`, [
      id,
    ])
  )[0];

test('a child that settles while the cancel waits for its lock settles before the parent is CANCELED; the others end with it', async () => {
  const { parent, children } = await tree(4);
  const last = children.at(-1)!;
  const w = await writer();
  try {
    // A writer (as the projector) holds the child, then completes it while the cancel waits.
    await w.query(`SELECT id FROM dispatcher.tasks WHERE id = $1 FOR UPDATE`, [last]);
    const canceled = rpc('boss', 'CancelTask', { id: parent });
    await new Promise((r) => setTimeout(r, 400));
    await w.query(`UPDATE dispatcher.tasks SET state = 'TASK_STATE_COMPLETED', status_timestamp = clock_timestamp() WHERE id = $1`, [last]);
    await w.query('COMMIT');
    const answer = await canceled;
    assert.equal(answer.result?.status?.state, 'TASK_STATE_CANCELED', JSON.stringify(answer));
  } finally {
    await w.end();
  }
  const p = await row(parent);
  const settled = await row(last);
  assert.equal(settled.state, 'TASK_STATE_COMPLETED');
  assert.ok(
    settled.ts.getTime() <= p.ts.getTime(),
    `child settled at ${settled.ts.toISOString()}, after the parent's cancel ${p.ts.toISOString()}`,
  );
  for (const id of children.slice(0, -1)) {
    const c = await row(id);
    assert.equal(c.state, 'TASK_STATE_CANCELED', id);
    assert.equal(c.ts.getTime(), p.ts.getTime(), 'canceled at the same moment as the parent');
    const [e] = await sql<{ ended_by: string }>(env.databaseUrl, `SELECT ended_by FROM dispatcher.executions WHERE task_id = $1`, [id]);
    assert.equal(e.ended_by, 'parent-ended');
    await eventually(`cancel command of ${id}`, () => kid.commands.some((k) => k.kind === 'task.cancel' && k.identity.taskId === id));
  }
});

test('a cancel chosen as a deadlock victim by a racing writer is run again inside, never answered -32603', async () => {
  const { parent, children } = await tree(3);
  const [low, , high] = children;
  const w = await writer();
  try {
    await w.query(`SELECT id FROM dispatcher.tasks WHERE id = $1 FOR UPDATE`, [high]);
    const canceled = rpc('boss', 'CancelTask', { id: parent });
    // The cancel now holds the lower children and waits for `high`; this writer asks for one of
    // them after it, so the cancel, waiting longer, is the one deadlock detection aborts.
    await new Promise((r) => setTimeout(r, 300));
    await w.query(`SELECT id FROM dispatcher.tasks WHERE id = $1 FOR UPDATE`, [low]).catch(() => undefined);
    await w.query('COMMIT').catch(() => undefined);
    const answer = await canceled;
    assert.equal(answer.error, undefined, JSON.stringify(answer));
    assert.equal(answer.result?.status?.state, 'TASK_STATE_CANCELED');
  } finally {
    await w.end();
  }
  for (const id of children) assert.equal((await row(id)).state, 'TASK_STATE_CANCELED', id);
});
