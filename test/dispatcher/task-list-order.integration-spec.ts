import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { listRequest, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';

// ListTasks pages are ordered by the `status.timestamp` they show: the list is ordered and paged on
// `tasks.status_timestamp`, which every writer keeps equal to it. The projector used to store its
// statement's commit time there (shared by every task of a batched write, ties broken by id)
// while the task showed the time it decided the event: pages came out of order by what they showed.
const env = await startTestDispatcher('list-order', {}, { DISPATCHER_LIFECYCLE_SWEEP_MS: '600000' });
await publishAgents(env.kafka, env.topics, [agentRecord('lister')]);
const worker = await startManualWorker(env.kafka, env.topics, 'lister');
after(() => worker.stop());
await eventually('the agent is served', async () => (await fetch(`${env.url}/a2a/lister/.well-known/agent-card.json`)).ok);

const db = new pg.Client({ connectionString: env.databaseUrl });
db.on('error', () => undefined); // the database is dropped under it at the end
await db.connect();
after(() => db.end());

const timestamps = (tasks: Task[]) => tasks.map((t) => t.status?.timestamp ?? '');
const nonIncreasing = (ts: string[]) => ts.every((t, i) => i === 0 || Date.parse(ts[i - 1]) >= Date.parse(t));

test('ListTasks comes back in the order of the status timestamps it shows, across pages too', async () => {
  const client = await a2aClient(env.url, 'lister', 'HTTP+JSON');
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) {
    ids.push(((await client.sendMessage(sendRequest(userMessage(`t${i}`), { returnImmediately: true }))) as Task).id);
  }
  const cmds = await Promise.all(ids.map((id) => worker.run(id)));
  // Events of many tasks at once (their changes share batched statements), some a few ms apart.
  await worker.emit(cmds[0], [{ seq: 0, state: 'WORKING' }]);
  await Promise.all(cmds.slice(1).map((cmd) => worker.emit(cmd, [{ seq: 0, state: 'WORKING' }])));
  await eventually('every task WORKING', async () => {
    const all = await client.listTasks(listRequest({ status: TaskState.TASK_STATE_WORKING }));
    return all.tasks.length === 8;
  });

  const page = await client.listTasks(listRequest());
  assert.equal(page.tasks.length, 8);
  const shown = timestamps(page.tasks);
  assert.ok(nonIncreasing(shown), `page order by shown timestamps: ${shown.join(', ')}`);
  // The order's column is the very time each task shows (the projection's commit time is not).
  const rows = (
    await db.query<{ id: string; column_ms: string; shown_ms: string }>(
      `SELECT id, (extract(epoch FROM status_timestamp) * 1000)::text AS column_ms,
              (extract(epoch FROM (task->'status'->>'timestamp')::timestamptz) * 1000)::text AS shown_ms
         FROM dispatcher.tasks`,
    )
  ).rows;
  assert.equal(rows.length, 8);
  for (const r of rows) assert.equal(Number(r.column_ms), Number(r.shown_ms), `task ${r.id}: list column vs status.timestamp`);

  // Pages of 3 continue each other exactly: same tasks, same order.
  const paged: Task[] = [];
  let pageToken = '';
  do {
    const p = await client.listTasks(listRequest({ pageSize: 3, pageToken }));
    paged.push(...p.tasks);
    pageToken = p.nextPageToken;
  } while (pageToken);
  assert.deepEqual(
    paged.map((t) => t.id),
    page.tasks.map((t) => t.id),
  );
  assert.ok(nonIncreasing(timestamps(paged)));

  // statusTimestampAfter filters on the same time the tasks show.
  const cut = page.tasks[3].status!.timestamp!;
  const newer = await client.listTasks(listRequest({ statusTimestampAfter: cut }));
  assert.deepEqual(
    newer.tasks.map((t) => t.id),
    page.tasks.filter((t) => Date.parse(t.status!.timestamp!) > Date.parse(cut)).map((t) => t.id),
  );
});
