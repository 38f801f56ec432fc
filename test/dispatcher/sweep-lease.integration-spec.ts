import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskState, type Task } from '@a2a-js/sdk';
import { SweepLease } from '@mesh/app-dispatcher';
import { eventually, freshDatabase, sql } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';

// One replica of a fleet runs the catch-up sweeps: the one whose connection holds the lease. Here
// the dispatcher under test is one replica, and a SweepLease of the spec's own stands in for
// another replica on the same database.
const env = await startTestDispatcher(
  'sweep-lease',
  {},
  {
    DISPATCHER_DEADLINE_GRACE_MS: '0',
    DISPATCHER_LIFECYCLE_SWEEP_MS: '100',
    DISPATCHER_SWEEP_LEASE_RETRY_MS: '1000',
    PUSH_POLL_MS: '50',
    PUSH_BACKOFF_BASE_MS: '100',
    PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
  },
);
await publishAgents(env.kafka, env.topics, [agentRecord('silent')]);
const worker = await startManualWorker(env.kafka, env.topics, 'silent');
after(() => worker.stop());
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/silent/.well-known/agent-card.json`)).ok);

/** Push webhook: refuses its first delivery (503, to be retried), accepts the rest; the states it got. */
const hits: string[] = [];
const hook = createServer((req, res) => {
  let data = '';
  req.on('data', (c) => (data += c));
  req.on('end', () => {
    hits.push(String((JSON.parse(data) as { statusUpdate?: { status?: { state?: string } } }).statusUpdate?.status?.state));
    res.writeHead(hits.length === 1 ? 503 : 204).end();
  });
});
await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
after(() => new Promise<void>((resolve) => hook.close(() => resolve())));
const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;

// Retries sooner than the dispatcher's lease, so it wins the lease once the dispatcher's connection dies.
const other = new SweepLease({ url: env.databaseUrl, retryMs: 50 });
after(() => other.stop());

/** The backend holding the lease's advisory lock in the dispatcher's database, if any. */
const holderPid = async () =>
  (
    await sql<{ pid: number }>(
      env.databaseUrl,
      `SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
       WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()`,
    )
  )[0]?.pid;

test('the first replica holds the lease; another on the same database waits, one on another database holds its own', async () => {
  await eventually('the dispatcher holds the lease', async () => (await holderPid()) !== undefined);
  await other.start();
  assert.equal(other.held, false, 'the dispatcher took it first');
  const elsewhere = new SweepLease({ url: await freshDatabase('sweep-lease-other'), retryMs: 100 });
  try {
    await elsewhere.start();
    assert.equal(elsewhere.held, true, 'a lease is per database, so per fleet');
  } finally {
    await elsewhere.stop();
  }
});

test('a replica without the lease neither sweeps nor retries pushes; when the holder goes, it takes the lease and does both', async () => {
  // The dispatcher's lease connection dies: the other replica takes the lease within its retry.
  const dispatcherHolder = await holderPid();
  assert.ok(dispatcherHolder);
  await sql(env.databaseUrl, 'SELECT pg_terminate_backend($1)', [dispatcherHolder]);
  await eventually('the other replica holds the lease', () => other.held);

  const client = await a2aClient(env.url, 'silent', 'JSONRPC');
  const request = sendRequest(userMessage('nobody answers'), { returnImmediately: true });
  request.configuration!.taskPushNotificationConfig = {
    tenant: '',
    id: 'w',
    taskId: '',
    url: hookUrl,
    token: '',
    authentication: undefined,
  };
  const task = (await client.sendMessage(request, { serviceParameters: { 'A2A-Deadline-Ms': '1000' } })) as Task;
  const cmd = await worker.run(task.id);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  // The delivery this replica committed is sent at once (it was woken), and refused.
  await eventually('the first delivery is attempted', () => hits.length === 1);
  // Past the deadline, the push backoff and many sweep and poll intervals: neither is its to run.
  await new Promise((r) => setTimeout(r, 2000));
  const waiting = await client.getTask({ tenant: '', id: task.id, historyLength: 0 });
  assert.equal(waiting.status?.state, TaskState.TASK_STATE_WORKING, 'the replica without the lease did not fail the task');
  assert.deepEqual(hits, ['TASK_STATE_WORKING'], 'nor retried the refused delivery');

  // The other replica stops (its connection ends): the dispatcher takes the lease again and sweeps.
  await other.stop();
  const failed = await eventually('the dispatcher fails the overdue task', async () => {
    const t = await client.getTask({ tenant: '', id: task.id, historyLength: 0 });
    return t.status?.state === TaskState.TASK_STATE_FAILED ? t : undefined;
  });
  assert.equal((failed.status?.message?.metadata as Record<string, unknown> | undefined)?.['mesh/reason'], 'DEADLINE_EXCEEDED');
  assert.ok(await holderPid(), 'the dispatcher holds the lease again');
  await eventually('the refused delivery is retried, then FAILED delivered', () => hits.length === 3);
  assert.deepEqual(hits, ['TASK_STATE_WORKING', 'TASK_STATE_WORKING', 'TASK_STATE_FAILED']);
});
