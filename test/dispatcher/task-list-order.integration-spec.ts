import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
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

test('a ListTasks page is bounded in bytes, not only in count: large tasks spread over pages, one larger than the budget comes alone', async () => {
  const client = await a2aClient(env.url, 'lister', 'HTTP+JSON');
  const contextId = `bytes-${Date.now()}`;
  const big = 'x'.repeat(300_000);
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    ids.push(((await client.sendMessage(sendRequest(userMessage(`b${i}`, { contextId }), { returnImmediately: true }))) as Task).id);
  }
  // One task over the budget on its own: two artifacts of 600 KB.
  const huge = ((await client.sendMessage(sendRequest(userMessage('huge', { contextId }), { returnImmediately: true }))) as Task).id;
  // One event per produce: a broker takes about 1 MB per request.
  for (const id of ids) {
    const cmd = await worker.run(id);
    await worker.emit(cmd, [{ seq: 0, artifact: big }]);
    await worker.emit(cmd, [{ seq: 1, state: 'COMPLETED' }]);
  }
  const hugeCmd = await worker.run(huge);
  await worker.emit(hugeCmd, [{ seq: 0, artifact: 'y'.repeat(600_000) }]);
  await worker.emit(hugeCmd, [{ seq: 1, artifact: 'z'.repeat(600_000) }]);
  await worker.emit(hugeCmd, [{ seq: 2, state: 'COMPLETED' }]);
  await eventually('every task COMPLETED', async () => {
    const done = await client.listTasks(listRequest({ contextId, status: TaskState.TASK_STATE_COMPLETED }));
    return done.totalSize === 7;
  });

  type Page = { tasks: Array<{ id: string; artifacts?: unknown[] }>; nextPageToken: string; totalSize: number };
  const page = async (token = '') => {
    const r = await rawRequest(
      `${env.url}/a2a/lister/tasks?contextId=${contextId}&pageSize=20&includeArtifacts=true${token ? `&pageToken=${token}` : ''}`,
      { headers: { authorization: 'Bearer demo-acme', 'a2a-version': '1.0' } },
    );
    assert.equal(r.status, 200);
    return { bytes: Buffer.byteLength(r.body), body: JSON.parse(r.body) as Page };
  };
  const seen: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const { bytes, body } = await page(token);
    pages += 1;
    assert.ok(body.tasks.length > 0);
    if (body.tasks.some((t) => t.id === huge)) {
      assert.equal(body.tasks.length, 1, 'a task over the budget comes alone');
    } else {
      assert.ok(bytes <= 1024 * 1024 + 400_000, `a page of ${bytes} bytes`);
    }
    assert.equal(body.totalSize, 7);
    seen.push(...body.tasks.map((t) => t.id));
    token = body.nextPageToken;
  } while (token);
  assert.deepEqual([...seen].sort(), [...ids, huge].sort(), 'every task exactly once');
  assert.ok(pages >= 3, `${pages} pages`);
  // Without artifacts the same tasks are small: one page.
  const bare = await client.listTasks(listRequest({ contextId, pageSize: 20 }));
  assert.equal(bare.tasks.length, 7);
  assert.equal(bare.nextPageToken, '');
});
