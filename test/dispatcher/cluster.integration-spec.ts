import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { TaskState, type Task } from '@a2a-js/sdk';
import { createKafka } from '@mesh/bus';
import { TopicDefinitions, TopicNames } from '@mesh/contract';
import { DEMO_API_KEYS } from '@mesh/auth';
import { eventually, freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { a2aClientWith, agentRecord, authFetch, publishAgents, standInForDirectory } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { freePort, spawnNode } from '../support/processes.js';

// DISPATCHER_PROCESSES=2: one primary, two node:cluster workers sharing the port. Every request on
// one keep-alive connection reaches the same worker (the primary hands out connections, not
// requests), so a pinned connection addresses one process; /livez names it.
const run = testRun();
const prefix = uniquePrefix('cluster');
const databaseUrl = await freshDatabase('cluster');
const topics = new TopicNames(prefix);
const kafka = createKafka({ brokers: run.brokers, clientId: 'test-cluster' });

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  KAFKA_BROKERS: run.brokers.join(','),
  TOPIC_PREFIX: prefix,
  DATABASE_URL: databaseUrl,
  EVENTS_TOPIC_PARTITIONS: '3',
  DISPATCHER_REQUIRE_HEALTHY_WORKER: 'false',
  DISPATCHER_PORT: String(port),
  AUTH_API_KEYS: DEMO_API_KEYS,
  DISPATCHER_PROCESSES: '2',
};
await standInForDirectory(kafka, new TopicDefinitions(prefix));
const primary = spawnNode('apps/dispatcher/dist/main.js', env);
// The agent is published once a replica listens (its catalog then reads the cards topic).
await eventually('a worker listens', async () => (await fetch(`${base}/livez`).catch(() => undefined))?.ok, 90000, 300);
await publishAgents(kafka, topics, [agentRecord('clustered')]);
const worker = await startManualWorker(kafka, topics, 'clustered');
after(() => worker.stop());

/** A fetch over one keep-alive connection (so one cluster worker), for the SDK client. */
function pinnedFetch(): { fetch: typeof fetch; close: () => void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const pinned = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
    return new Promise<Response>((resolve, reject) => {
      const req = http.request(url, { method: init?.method ?? 'GET', headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
          resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 500, headers: h }));
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }) as typeof fetch;
  return { fetch: pinned, close: () => agent.destroy() };
}

/** A pinned connection to the worker with cluster id `id` (new connections go to the workers in turn). */
async function pinnedTo(id: number): Promise<{ fetch: typeof fetch; close: () => void }> {
  for (let i = 0; i < 40; i++) {
    const c = pinnedFetch();
    const live = (await (await c.fetch(`${base}/livez`)).json()) as { worker?: number };
    if (live.worker === id) return c;
    c.close();
  }
  throw new Error(`no connection reached cluster worker ${id}`);
}

/** An SDK client over a connection to the worker with cluster id `id`. */
async function connectionTo(id: number) {
  const c = await pinnedTo(id);
  after(() => c.close());
  const client = await a2aClientWith(authFetch('demo-acme', 8, c.fetch), base, 'clustered', 'JSONRPC');
  return { client, worker: id };
}

const workerPids = () =>
  execFileSync('pgrep', ['-P', String(primary.child.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .sort();

await eventually(
  'both processes serve the agent',
  async () => {
    const seen = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const c = pinnedFetch();
      const card = await c.fetch(`${base}/a2a/clustered/.well-known/agent-card.json`).catch(() => undefined);
      const live = card?.ok ? ((await (await c.fetch(`${base}/livez`)).json()) as { worker?: number }) : undefined;
      c.close();
      if (live?.worker !== undefined) seen.add(live.worker);
    }
    return seen.size === 2;
  },
  90000,
  300,
);

test('a task accepted by one process is read, and followed to its end, by the other', { timeout: 120000 }, async () => {
  const one = await connectionTo(1);
  const two = await connectionTo(2);
  for (const [accepting, reading] of [
    [one, two],
    [two, one],
  ]) {
    const accepted = (await accepting.client.sendMessage(
      sendRequest(userMessage(`via ${accepting.worker}`), { returnImmediately: true }),
    )) as Task;
    assert.equal(accepted.status?.state, TaskState.TASK_STATE_SUBMITTED);
    const read = await reading.client.getTask({ tenant: '', id: accepted.id, historyLength: 0 });
    assert.equal(read.id, accepted.id);
    assert.equal(read.contextId, accepted.contextId);

    const cmd = await worker.run(accepted.id);
    await worker.emit(cmd, [
      { seq: 0, artifact: 'done' },
      { seq: 1, state: 'COMPLETED' },
    ]);
    for (const c of [accepting, reading]) {
      const done = await eventually(`COMPLETED on worker ${c.worker}`, async () => {
        const t = await c.client.getTask({ tenant: '', id: accepted.id, historyLength: 0 });
        return t.status?.state === TaskState.TASK_STATE_COMPLETED && t;
      });
      assert.equal(done.artifacts.length, 1);
    }
  }
  // One run command per task: the two outbox relays shared the rows, neither sent one twice.
  const runs = worker.commands.filter((c) => c.kind === 'task.run');
  assert.equal(new Set(runs.map((c) => c.identity.taskId)).size, 2);
});

/** `GET /metrics` as the worker with cluster id `id` answers it. */
async function metricsFrom(id: number): Promise<{ status: number; text: string }> {
  const c = await pinnedTo(id);
  try {
    const res = await c.fetch(`${base}/metrics`);
    return { status: res.status, text: await res.text() };
  } finally {
    c.close();
  }
}

/** The sum of a counter's samples whose labels include every one of `labels`. */
function counterSum(text: string, name: string, labels: string[]): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

test('/metrics on either process counts what both did (a scrape of the shared port reaches one)', { timeout: 60000 }, async () => {
  // The test above had each process accept one task; both were completed.
  for (const id of [1, 2]) {
    const { status, text } = await metricsFrom(id);
    assert.equal(status, 200);
    assert.equal(counterSum(text, 'mesh_tasks_total', ['agent="clustered"', 'outcome="accepted"']), 2, `worker ${id}: accepted`);
    assert.equal(counterSum(text, 'mesh_tasks_total', ['agent="clustered"', 'outcome="completed"']), 2, `worker ${id}: completed`);
    // One exposition, not one per worker: every metric family is declared once.
    const families = text.split('\n').filter((l) => l.startsWith('# TYPE mesh_tasks_total '));
    assert.equal(families.length, 1);
  }
});

test('a grant one process signed is exchanged at the other: the primary gives them one key', { timeout: 60000 }, async () => {
  const one = await connectionTo(1);
  const accepted = (await one.client.sendMessage(sendRequest(userMessage('a grant'), { returnImmediately: true }))) as Task;
  const cmd = await worker.run(accepted.id);
  assert.ok(cmd.grant);
  const two = await pinnedTo(2);
  after(() => two.close());
  const keys = async (c: { fetch: typeof fetch }) =>
    ((await (await c.fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);
  assert.deepEqual(await keys(two), await keys(await pinnedTo(1)));
  const res = await two.fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: cmd.grant,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      resource: 'billing-tools',
    }).toString(),
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(((await res.json()) as { token_type: string }).token_type, 'Bearer');
});

test('a SIGKILLed worker is replaced, and the new one serves', { timeout: 120000 }, async () => {
  const before = workerPids();
  assert.equal(before.length, 2);
  process.kill(before[0], 'SIGKILL');
  const after_ = await eventually(
    'a replacement worker',
    () => {
      const now = workerPids();
      return now.length === 2 && !now.includes(before[0]) && now;
    },
    60000,
    200,
  );
  assert.ok(after_.includes(before[1]), 'the other worker kept running');
  // Cluster worker ids only grow: the replacement is worker 3.
  const three = await eventually('worker 3 serves', () => connectionTo(3).catch(() => undefined), 90000, 300);
  const task = (await three.client.sendMessage(sendRequest(userMessage('after the crash'), { returnImmediately: true }))) as Task;
  assert.equal((await three.client.getTask({ tenant: '', id: task.id, historyLength: 0 })).id, task.id);
});

test('SIGTERM to the primary drains every worker and exits 0', { timeout: 60000 }, async () => {
  const pids = workerPids();
  primary.child.kill('SIGTERM');
  const exit = await primary.exited;
  assert.deepEqual(exit, { code: 0, signal: null });
  for (const pid of pids) assert.throws(() => process.kill(pid, 0), /ESRCH/, `worker ${pid} still running`);
});

test('a primary that cannot migrate forks nothing and exits 1, naming the problem', { timeout: 60000 }, async () => {
  const bad = spawnNode('apps/dispatcher/dist/main.js', {
    ...env,
    DISPATCHER_PORT: String(await freePort()),
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
  });
  const exit = await bad.exited;
  assert.equal(exit.code, 1);
  assert.match(bad.stderr(), /dispatcher: failed to start/);
});

test('workers that cannot start (port taken) stop the primary with exit 1 instead of a fork loop', { timeout: 90000 }, async () => {
  const taken = http.createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  after(() => taken.close());
  const bad = spawnNode('apps/dispatcher/dist/main.js', { ...env, DISPATCHER_PORT: String((taken.address() as { port: number }).port) });
  const exit = await bad.exited;
  assert.equal(exit.code, 1);
  assert.match(bad.stderr(), /dispatcher: a worker failed to start \(code 1\); stopping/);
});

test('DISPATCHER_PROCESSES other than auto or 1..64 is refused at start', { timeout: 60000 }, async () => {
  const bad = spawnNode('apps/dispatcher/dist/main.js', {
    ...env,
    DISPATCHER_PORT: String(await freePort()),
    DISPATCHER_PROCESSES: 'many',
  });
  const exit = await bad.exited;
  assert.equal(exit.code, 1);
  assert.match(bad.stderr(), /DISPATCHER_PROCESSES="many": expected auto or a whole number from 1 to 64/);
});
