import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { TaskState, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { metricSample } from '../support/metrics.js';

// Deadlines: no grace, quick sweeps. Retention is tested on a dispatcher of its own below. Blocking
// sends re-read their task only once a minute: what wakes them sooner is the change committed here.
const env = await startTestDispatcher(
  'lifecycle',
  {},
  {
    DISPATCHER_DEADLINE_GRACE_MS: '0',
    DISPATCHER_LIFECYCLE_SWEEP_MS: '200',
    DISPATCHER_WAIT_POLL_MS: '60000',
    PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
  },
);
await publishAgents(env.kafka, env.topics, [agentRecord('slow')]);
const worker = await startManualWorker(env.kafka, env.topics, 'slow');
after(() => worker.stop());
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/slow/.well-known/agent-card.json`)).ok);

/** Push webhook: bodies by event id. */
const pushed = new Map<string, { statusUpdate?: { status?: { state?: string } } }>();
const hook = createServer((req, res) => {
  let data = '';
  req.on('data', (c) => (data += c));
  req.on('end', () => {
    pushed.set(String(req.headers['x-a2a-event-id']), JSON.parse(data));
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
after(() => new Promise<void>((resolve) => hook.close(() => resolve())));
const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;

/** SendMessage (returnImmediately) to `slow`, with a deadline and a push config to the webhook when asked. */
async function send(client: Client, text: string, opts: { deadlineMs?: number; push?: boolean } = {}): Promise<Task> {
  const request = sendRequest(userMessage(text), { returnImmediately: true });
  if (opts.push) {
    request.configuration!.taskPushNotificationConfig = {
      tenant: '',
      id: 'w',
      taskId: '',
      url: hookUrl,
      token: '',
      authentication: undefined,
    };
  }
  const deadline = opts.deadlineMs ? { serviceParameters: { 'A2A-Deadline-Ms': String(opts.deadlineMs) } } : {};
  return (await client.sendMessage(request, deadline)) as Task;
}

test('a task whose deadline passes with no result is FAILED by the platform, its turn closed and its worker told to stop', async () => {
  const client = await a2aClient(env.url, 'slow', 'JSONRPC');
  const late = await send(client, 'late', { deadlineMs: 800, push: true });
  const patient = await send(client, 'patient', { deadlineMs: 600_000 });
  const unbounded = await send(client, 'unbounded');
  const get = (id: string) => client.getTask({ tenant: '', id, historyLength: 10 });

  const failed = await eventually('the overdue task failed', async () => {
    const t = await get(late.id);
    return t.status?.state === TaskState.TASK_STATE_FAILED ? t : undefined;
  });
  const text = failed.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') ?? '';
  assert.match(text, /deadline \(.+\) passed before the agent reported a result/);
  assert.equal((failed.status?.message?.metadata as Record<string, unknown> | undefined)?.['mesh/reason'], 'DEADLINE_EXCEEDED');
  assert.equal((await get(patient.id)).status?.state, TaskState.TASK_STATE_SUBMITTED, 'a deadline still ahead: untouched');
  assert.equal((await get(unbounded.id)).status?.state, TaskState.TASK_STATE_SUBMITTED, 'no deadline: untouched');
  const note = await eventually('push subscriber told', () => pushed.get(`${late.id}:deadline`));
  assert.equal(note.statusUpdate?.status?.state, 'TASK_STATE_FAILED');

  // The worker's channel gets a cancel for the very turn it was given.
  const run = await worker.run(late.id);
  const cancel = await eventually('cancel command', () =>
    worker.commands.find((c) => c.kind === 'task.cancel' && c.identity.taskId === late.id),
  );
  assert.equal(cancel.identity.executionId, run.identity.executionId);
  assert.equal(cancel.identity.subject, 'mesh:dispatcher', 'the platform, not a caller, stands behind it');

  // A report arriving after that does not change the state the caller was told; it is recorded
  // beside the platform's reason, and counted nowhere.
  await worker.emit(run, [
    { seq: 0, artifact: 'too late' },
    { seq: 1, state: 'COMPLETED' },
  ]);
  const reported = await eventually('the late report recorded', async () => {
    const t = await get(late.id);
    return t.status?.message?.metadata?.['mesh/agent_state'] ? t : undefined;
  });
  assert.equal(reported.status?.state, TaskState.TASK_STATE_FAILED);
  assert.equal(reported.status?.message?.metadata?.['mesh/agent_state'], 'TASK_STATE_COMPLETED');
  assert.equal(reported.status?.message?.metadata?.['mesh/reason'], 'DEADLINE_EXCEEDED', "the platform's reason stays");
  assert.equal(reported.artifacts.length, 1);
  assert.equal(await metricSample(env.url, 'mesh_tasks_total', { tenant: 'acme', agent: 'slow', outcome: 'expired' }), 1);
  assert.equal(await metricSample(env.url, 'mesh_tasks_total', { tenant: 'acme', agent: 'slow', outcome: 'completed' }), undefined);
});

test('CancelTask ends the turn the same way: CANCELED, push subscribers told, the worker told to stop', async () => {
  const client = await a2aClient(env.url, 'slow', 'HTTP+JSON');
  const task = await send(client, 'cancel me', { push: true });
  const run = await worker.run(task.id);
  const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  const note = await eventually('push subscriber told', () => pushed.get(`${task.id}:cancel`));
  assert.equal(note.statusUpdate?.status?.state, 'TASK_STATE_CANCELED');
  const cancel = await eventually('cancel command', () =>
    worker.commands.find((c) => c.kind === 'task.cancel' && c.identity.taskId === task.id),
  );
  assert.equal(cancel.identity.executionId, run.identity.executionId);
  assert.equal(cancel.identity.subject, 'alice', 'the caller who canceled');
});

test('a blocking send waiting on a task answers as soon as CancelTask on this replica ends it', { timeout: 20000 }, async () => {
  const client = await a2aClient(env.url, 'slow', 'JSONRPC');
  const before = worker.commands.length;
  const blocking = client.sendMessage(sendRequest(userMessage('wait for me')));
  const run = await eventually('the command reached the worker', () => worker.commands.slice(before).find((c) => c.kind === 'task.run'));
  const canceled = await client.cancelTask({ tenant: '', id: run.identity.taskId, metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  // Without the wake it would answer at its next re-read, a minute on.
  const answered = (await blocking) as Task;
  assert.equal(answered.id, run.identity.taskId);
  assert.equal(answered.status?.state, TaskState.TASK_STATE_CANCELED);
});

test('settled tasks leave the store after the retention period, with their dedup rows; open tasks stay', async () => {
  const kept = await startTestDispatcher('retention', {}, { DISPATCHER_TASK_RETENTION_MS: '1500', DISPATCHER_LIFECYCLE_SWEEP_MS: '200' });
  await publishAgents(kept.kafka, kept.topics, [agentRecord('short')]);
  const w = await startManualWorker(kept.kafka, kept.topics, 'short');
  after(() => w.stop());
  await eventually('agent served', async () => (await fetch(`${kept.url}/a2a/short/.well-known/agent-card.json`)).ok);
  const client = await a2aClient(kept.url, 'short', 'HTTP+JSON');
  const contextId = `retained-${Date.now()}`;
  const message = userMessage('done soon', { contextId });
  const done = (await client.sendMessage(sendRequest(message, { returnImmediately: true }))) as Task;
  // A message answered with the same work is recorded with the task, and goes with it.
  const twin = (await client.sendMessage(sendRequest(userMessage('done soon', { contextId }), { returnImmediately: true }))) as Task;
  assert.equal(twin.id, done.id);
  const open = (await client.sendMessage(sendRequest(userMessage('never answered'), { returnImmediately: true }))) as Task;
  await w.emit(await w.run(done.id), [
    { seq: 0, artifact: 'ok' },
    { seq: 1, state: 'COMPLETED' },
  ]);
  await eventually(
    'completed',
    async () => (await client.getTask({ tenant: '', id: done.id, historyLength: 0 })).status?.state === TaskState.TASK_STATE_COMPLETED,
  );
  await eventually(
    'the settled task is gone',
    async () => {
      try {
        await client.getTask({ tenant: '', id: done.id, historyLength: 0 });
        return false;
      } catch (err) {
        return /not found/i.test(String(err));
      }
    },
    15_000,
  );
  assert.equal((await client.getTask({ tenant: '', id: open.id, historyLength: 0 })).status?.state, TaskState.TASK_STATE_SUBMITTED);

  const db = new pg.Client({ connectionString: kept.databaseUrl });
  await db.connect();
  try {
    // Nothing of the settled task is left (its executions and stream events have no foreign key to
    // cascade from); the open task keeps all of its rows.
    const left = await db.query(
      `SELECT (SELECT count(*) FROM dispatcher.executions WHERE task_id = $1)::int AS executions,
              (SELECT count(*) FROM dispatcher.task_events WHERE task_id = $1)::int AS events,
              (SELECT count(*) FROM dispatcher.message_dedup WHERE task_id = $1)::int AS dedup,
              (SELECT count(*) FROM dispatcher.executions WHERE task_id = $2)::int AS open_executions,
              (SELECT count(*) FROM dispatcher.message_dedup WHERE task_id = $2)::int AS open_dedup`,
      [done.id, open.id],
    );
    assert.deepEqual(left.rows[0], { executions: 0, events: 0, dedup: 0, open_executions: 1, open_dedup: 1 });
  } finally {
    await db.end();
  }
  // Past retention a retry of the same message is new work: the dedup window is the retention period.
  const again = (await client.sendMessage(sendRequest(message, { returnImmediately: true }))) as Task;
  assert.notEqual(again.id, done.id);
});

test('a turn no worker started by its start-by time is FAILED (NOT_STARTED); its command carried that time; a started one is left alone', async () => {
  const strict = await startTestDispatcher(
    'start-by',
    {},
    { DISPATCHER_START_TIMEOUT_MS: '1500', DISPATCHER_DEADLINE_GRACE_MS: '0', DISPATCHER_LIFECYCLE_SWEEP_MS: '200' },
  );
  await publishAgents(strict.kafka, strict.topics, [agentRecord('idle')]);
  const w = await startManualWorker(strict.kafka, strict.topics, 'idle');
  after(() => w.stop());
  await eventually('agent served', async () => (await fetch(`${strict.url}/a2a/idle/.well-known/agent-card.json`)).ok);
  const client = await a2aClient(strict.url, 'idle', 'JSONRPC');
  const before = Date.now();
  const unstarted = (await client.sendMessage(sendRequest(userMessage('nobody takes me'), { returnImmediately: true }))) as Task;
  const started = (await client.sendMessage(sendRequest(userMessage('taken'), { returnImmediately: true }))) as Task;
  const run = await w.run(unstarted.id);
  const startBy = run.identity.startByUnixMs;
  assert.ok(startBy !== undefined && startBy >= before + 1500 && startBy <= Date.now() + 1500, `start_by_unix_ms ${startBy}`);
  await w.emit(await w.run(started.id), [{ seq: 0, state: 'WORKING' }]);

  const failed = await eventually('the unstarted task failed', async () => {
    const t = await client.getTask({ tenant: '', id: unstarted.id, historyLength: 0 });
    return t.status?.state === TaskState.TASK_STATE_FAILED ? t : undefined;
  });
  assert.equal((failed.status?.message?.metadata as Record<string, unknown> | undefined)?.['mesh/reason'], 'NOT_STARTED');
  const cancel = await eventually('cancel command', () =>
    w.commands.find((c) => c.kind === 'task.cancel' && c.identity.taskId === unstarted.id),
  );
  assert.equal(cancel.identity.executionId, run.identity.executionId);
  assert.equal(await metricSample(strict.url, 'mesh_tasks_total', { tenant: 'acme', agent: 'idle', outcome: 'not_started' }), 1);
  // Past its start-by time too, but a worker reported it started: it is the worker's to finish.
  await new Promise((r) => setTimeout(r, 2000 - (Date.now() - before)));
  await new Promise((r) => setTimeout(r, 600));
  assert.equal((await client.getTask({ tenant: '', id: started.id, historyLength: 0 })).status?.state, TaskState.TASK_STATE_WORKING);
});
