import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { streamingClient } from '../support/streaming.js';
import { openRawSse, type RawSse } from '../support/raw-sse.js';

// Streams a caller abandons must not go on costing the database. 200 subscriptions of one
// long-running task (100 raw SSE on HTTP+JSON, 100 through the official client on JSON-RPC): while
// open they share one poll of the task, and once the callers close them Postgres is back at its
// idle transaction rate within seconds, long before the task ends. The same holds for blocking
// SendMessage calls whose callers leave before their tasks settle.
const env = await startTestDispatcher('stream-load', {}, { DISPATCHER_MAX_STREAMS_PER_TENANT: '1000' });
await publishAgents(env.kafka, env.topics, [agentRecord('long')]);
const worker = await startManualWorker(env.kafka, env.topics, 'long');
after(() => worker.stop());
await eventually('the agent is served', async () => (await fetch(`${env.url}/a2a/long/.well-known/agent-card.json`)).ok);

const db = new pg.Client({ connectionString: env.databaseUrl });
// Dropping the database at the end terminates this connection: not an error of the test.
db.on('error', () => undefined);
await db.connect();
after(() => db.end());

/** Committed + rolled-back transactions per second in the test's own database over `ms`. */
async function xactRate(ms: number): Promise<number> {
  const read = async () => {
    const [row] = (
      await db.query<{ n: string }>(
        `SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()`,
      )
    ).rows;
    return Number(row.n);
  };
  const before = await read();
  const t0 = Date.now();
  await sleep(ms);
  const after = await read();
  return ((after - before) * 1000) / (Date.now() - t0);
}

const SETTLE_MS = 11_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('200 streams closed by their callers stop their work: Postgres returns to its idle transaction rate', async () => {
  const client = await a2aClient(env.url, 'long', 'HTTP+JSON');
  const taskId = ((await client.sendMessage(sendRequest(userMessage('long work'), { returnImmediately: true }))) as Task).id;
  const cmd = await worker.run(taskId);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually(
    'WORKING stored',
    async () => (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state === TaskState.TASK_STATE_WORKING,
  );

  // A backend busy within the last second reports its counts to pg_stat_database only after
  // 10 s idle (PGSTAT_IDLE_INTERVAL): each window starts once the previous phase's counts are in.
  await sleep(SETTLE_MS);
  const idle = await xactRate(3000);

  const raw: RawSse[] = await Promise.all(
    Array.from({ length: 100 }, () =>
      openRawSse(`${env.url}/a2a/long/tasks/${taskId}:subscribe`, {
        headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0' },
      }),
    ),
  );
  for (const s of raw) assert.equal(s.status, 200);
  const rpc = await streamingClient(env.url, 'long', 'JSONRPC');
  const aborts = Array.from({ length: 100 }, () => new AbortController());
  const firsts = aborts.map(async (ac) => {
    const stream = rpc.resubscribeTask({ tenant: '', id: taskId }, { signal: ac.signal });
    const first = await stream.next();
    // Keep reading in the background until the caller aborts.
    void (async () => {
      try {
        for await (const _ of stream) void _;
      } catch {
        // aborted by the test
      }
    })();
    return first.value;
  });
  const opened = await Promise.all(firsts);
  assert.ok(opened.every((e) => e?.payload?.$case === 'task'));
  await eventually('every raw stream got its snapshot', () => raw.every((s) => s.events.length >= 1));

  await sleep(SETTLE_MS);
  const open = await xactRate(3000);

  for (const s of raw) s.close();
  for (const ac of aborts) ac.abort();
  await Promise.all(raw.map((s) => s.ended));
  await sleep(SETTLE_MS);
  const closed = await xactRate(3000);

  const bound = idle + 25;
  assert.ok(open <= bound, `with 200 streams open: ${open.toFixed(1)} xact/s, idle ${idle.toFixed(1)} xact/s (bound ${bound.toFixed(1)})`);
  assert.ok(
    closed <= bound,
    `after the callers closed: ${closed.toFixed(1)} xact/s, idle ${idle.toFixed(1)} xact/s (bound ${bound.toFixed(1)})`,
  );

  // The task itself was not disturbed: it still runs and ends as the worker says.
  await worker.emit(cmd, [
    { seq: 1, artifact: 'done' },
    { seq: 2, state: 'COMPLETED' },
  ]);
  await eventually(
    'COMPLETED stored',
    async () => (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state === TaskState.TASK_STATE_COMPLETED,
  );
});

test('100 blocking sends abandoned by their callers stop waiting: Postgres returns to its idle transaction rate', async () => {
  const clients = { JSONRPC: await a2aClient(env.url, 'long', 'JSONRPC'), 'HTTP+JSON': await a2aClient(env.url, 'long', 'HTTP+JSON') };
  const countTasks = async () => Number((await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM dispatcher.tasks`)).rows[0].n);
  const before = await countTasks();
  await sleep(SETTLE_MS);
  const idle = await xactRate(3000);

  // The worker never answers: each call would wait out DISPATCHER_BLOCKING_TIMEOUT_MS (30 s).
  const aborts = Array.from({ length: 100 }, () => new AbortController());
  const calls = aborts.map((ac, i) =>
    (i % 2 ? clients.JSONRPC : clients['HTTP+JSON']).sendMessage(sendRequest(userMessage(`blocking ${i}`)), { signal: ac.signal }).then(
      () => 'answered',
      () => 'aborted',
    ),
  );
  await eventually('every blocking send accepted', async () => (await countTasks()) === before + 100);
  await sleep(1000);
  for (const ac of aborts) ac.abort();
  assert.deepEqual(new Set(await Promise.all(calls)), new Set(['aborted']), 'no call was answered before its caller left');

  await sleep(SETTLE_MS);
  const left = await xactRate(3000);
  const bound = idle + 25;
  assert.ok(
    left <= bound,
    `after 100 blocking callers left: ${left.toFixed(1)} xact/s, idle ${idle.toFixed(1)} xact/s (bound ${bound.toFixed(1)})`,
  );
});
