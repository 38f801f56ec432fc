import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Task } from '@a2a-js/sdk';
import { MeshMetrics } from '@mesh/telemetry';
import { eventually, sql } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { freePort } from '../support/processes.js';

const metrics = new MeshMetrics({ defaultMetrics: false });
const env = await startTestDispatcher(
  'push',
  { metrics },
  { PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8', PUSH_BACKOFF_BASE_MS: '200', PUSH_BACKOFF_MAX_MS: '1500', PUSH_MAX_ATTEMPTS: '40' },
);
await publishAgents(env.kafka, env.topics, [agentRecord('hook')]);
const worker = await startManualWorker(env.kafka, env.topics, 'hook');
after(() => worker.stop());
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/hook/.well-known/agent-card.json`)).ok);

/** Webhook receiver: every POST by event id, with its headers and body; can go down and come back on its port. */
const received = new Map<
  string,
  Array<{ path: string; token?: string; auth?: string; body: { statusUpdate?: { status: { state: string } }; artifactUpdate?: unknown } }>
>();
const hits: string[] = [];
/** Accepted deliveries in arrival order. */
const arrivals: Array<{ path: string; id: string }> = [];
/** Paths under /refuse-first/ answer their first request with 503. */
const refusedOnce = new Set<string>();
const port = await freePort();
let server: Server | undefined;
const handler = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
  let data = '';
  req.on('data', (c) => (data += c));
  req.on('end', () => {
    hits.push(req.url ?? '');
    if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
      return;
    }
    if (req.url?.startsWith('/refuse-first/') && !refusedOnce.has(req.url)) {
      refusedOnce.add(req.url);
      res.writeHead(503).end();
      return;
    }
    const id = String(req.headers['x-a2a-event-id']);
    arrivals.push({ path: req.url ?? '', id });
    const list = received.get(id) ?? [];
    list.push({
      path: req.url ?? '',
      token: req.headers['x-a2a-notification-token'] as string | undefined,
      auth: req.headers.authorization,
      body: JSON.parse(data),
    });
    received.set(id, list);
    res.writeHead(204).end();
  });
};
const up = () => new Promise<void>((resolve) => (server = createServer(handler)).listen(port, '127.0.0.1', resolve));
const down = () => new Promise<void>((resolve) => (server!.closeAllConnections(), server!.close(() => resolve())));
await up();
after(() => server?.listening && down());

const hookUrl = (path = '/hook') => `http://127.0.0.1:${port}${path}`;

test('push config CRUD per tenant: create, get, list, delete (idempotent); the card claims push', async () => {
  const card = (await (await fetch(`${env.url}/a2a/hook/.well-known/agent-card.json`)).json()) as {
    capabilities: { pushNotifications: boolean };
  };
  assert.equal(card.capabilities.pushNotifications, true);
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  const task = (await client.sendMessage(sendRequest(userMessage('crud'), { returnImmediately: true }))) as Task;
  const made = await client.createTaskPushNotificationConfig({
    tenant: '',
    id: 'cfg-1',
    taskId: task.id,
    url: hookUrl(),
    token: 'tok',
    authentication: { scheme: 'Bearer', credentials: 'secret' },
  });
  assert.equal(made.id, 'cfg-1');
  const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' });
  assert.equal(got.url, hookUrl());
  assert.equal(got.authentication?.scheme, 'Bearer');
  const rest = await a2aClient(env.url, 'hook', 'HTTP+JSON');
  assert.equal((await rest.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length, 1);
  // Another tenant sees nothing of it.
  const globex = await a2aClient(env.url, 'hook', 'JSONRPC', 'demo-globex');
  await assert.rejects(globex.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' }), /not found/i);
  await rest.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' });
  await rest.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' });
  assert.equal(
    (await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length,
    0,
  );
});

test("a push config's id is kept as the caller gave it, spaces included; an empty one gets a fresh id", async () => {
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  const task = (await client.sendMessage(sendRequest(userMessage('ids'), { returnImmediately: true }))) as Task;
  const cfg = (id: string) => ({ tenant: '', id, taskId: task.id, url: hookUrl(), token: '', authentication: undefined });
  const spaced = await client.createTaskPushNotificationConfig(cfg(' sp '));
  assert.equal(spaced.id, ' sp ');
  assert.equal((await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: ' sp ' })).id, ' sp ');
  const fresh = await client.createTaskPushNotificationConfig(cfg(''));
  assert.match(fresh.id, /^[0-9a-f-]{36}$/);
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: ' sp ' });
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: fresh.id });
  assert.equal(
    (await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length,
    0,
  );
});

test('SSRF: private, link-local, metadata and loopback outside the allowlist are refused', async () => {
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  const task = (await client.sendMessage(sendRequest(userMessage('ssrf'), { returnImmediately: true }))) as Task;
  for (const url of [
    'http://10.1.2.3/h',
    'http://192.168.0.1/h',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/h',
    'ftp://example.com/h',
  ]) {
    await assert.rejects(
      client.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: task.id, url, token: '', authentication: undefined }),
      /refused|not allowed/i,
      url,
    );
  }
  // A non-public address says which setting would admit it (a local receiver in development).
  await assert.rejects(
    client.createTaskPushNotificationConfig({
      tenant: '',
      id: '',
      taskId: task.id,
      url: 'http://[::1]/h',
      token: '',
      authentication: undefined,
    }),
    /::1 \(loopback\) is not a public address \(the operator may admit its network with PUSH_EGRESS_ALLOW_CIDRS/,
  );
});

test(
  'every event reaches the webhook at least once with a stable event id, even when it was down for 10 s',
  { timeout: 90000 },
  async () => {
    const client = await a2aClient(env.url, 'hook', 'HTTP+JSON');
    const msg = userMessage('notify me');
    const task = (await client.sendMessage({
      ...sendRequest(msg, { returnImmediately: true }),
      configuration: {
        acceptedOutputModes: [],
        returnImmediately: true,
        historyLength: undefined,
        taskPushNotificationConfig: {
          tenant: '',
          id: 'w',
          taskId: '',
          url: hookUrl(),
          token: 'tok-9',
          authentication: { scheme: 'Bearer', credentials: 'c9' },
        },
      },
    } as never)) as Task;
    const cmd = await worker.run(task.id);
    const exec = cmd.identity.executionId;
    await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
    await eventually('WORKING delivered', () => received.has(`${exec}:0`));
    await down();
    await worker.emit(cmd, [
      { seq: 1, artifact: 'result' },
      { seq: 2, state: 'COMPLETED' },
    ]);
    await eventually('delivery attempts failing while down', async () => {
      const [r] = await sql<{ n: number }>(
        env.databaseUrl,
        `SELECT count(*)::int AS n FROM dispatcher.push_deliveries WHERE task_id = $1 AND attempts > 1 AND status = 'pending'`,
        [task.id],
      );
      return r.n >= 1;
    });
    await new Promise((r) => setTimeout(r, 10000)); // the receiver stays down for 10 s, as specified
    await up();
    await eventually('all events delivered', () => [0, 1, 2].every((s) => received.has(`${exec}:${s}`)), 30000);
    const final = received.get(`${exec}:2`)![0];
    assert.equal(final.token, 'tok-9');
    assert.equal(final.auth, 'Bearer c9');
    assert.equal(final.body.statusUpdate?.status.state, 'TASK_STATE_COMPLETED');
    assert.ok(received.get(`${exec}:1`)![0].body.artifactUpdate);
    const [{ n }] = await sql<{ n: number }>(
      env.databaseUrl,
      `SELECT count(*)::int AS n FROM dispatcher.push_deliveries WHERE task_id = $1 AND status = 'delivered'`,
      [task.id],
    );
    assert.equal(n, 3);
  },
);

test('a webhook that keeps failing (a redirect, never followed) is recorded as failed and counted', async () => {
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  const task = (await client.sendMessage(sendRequest(userMessage('redirected'), { returnImmediately: true }))) as Task;
  await client.createTaskPushNotificationConfig({
    tenant: '',
    id: 'r',
    taskId: task.id,
    url: hookUrl('/redirect'),
    token: '',
    authentication: undefined,
  });
  const cmd = await worker.run(task.id);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  const row = await eventually('failure recorded', async () => {
    const rows = await sql<{ status: string; last_error: string }>(
      env.databaseUrl,
      `SELECT status, last_error FROM dispatcher.push_deliveries WHERE task_id = $1`,
      [task.id],
    );
    return rows[0]?.status === 'failed' ? rows[0] : undefined;
  });
  assert.match(row.last_error, /redirect \(302\) not followed/);
  assert.ok(!hits.includes('/elsewhere'));
  const failed = (await metrics.pushDeliveries.get()).values.find((v) => v.labels.result === 'failed');
  assert.ok((failed?.value ?? 0) >= 1);
});

/** Sends a message with a push config for `path` and returns the task and its run command. */
async function taskWithHook(text: string, configId: string, path: string) {
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  const task = (await client.sendMessage({
    ...sendRequest(userMessage(text), { returnImmediately: true }),
    configuration: {
      acceptedOutputModes: [],
      returnImmediately: true,
      historyLength: undefined,
      taskPushNotificationConfig: { tenant: '', id: configId, taskId: '', url: hookUrl(path), token: '', authentication: undefined },
    },
  } as never)) as Task;
  return { task, cmd: await worker.run(task.id) };
}

test("a task's events reach a receiver in order: a refused delivery is retried before the later ones go out", async () => {
  const { cmd } = await taskWithHook('in order', 'o', '/refuse-first/o');
  const exec = cmd.identity.executionId;
  await worker.emit(cmd, [
    { seq: 0, state: 'WORKING' },
    { seq: 1, artifact: 'result' },
    { seq: 2, state: 'COMPLETED' },
  ]);
  await eventually('all events delivered', () => [0, 1, 2].every((s) => received.has(`${exec}:${s}`)), 30000);
  assert.ok(refusedOnce.has('/refuse-first/o'), 'the first delivery was refused');
  assert.deepEqual(
    arrivals.filter((a) => a.path === '/refuse-first/o').map((a) => a.id),
    [`${exec}:0`, `${exec}:1`, `${exec}:2`],
  );
});

test('a push config given with SendMessage is checked before the task is stored, and stored with it', async () => {
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  const refused = userMessage('refused hook');
  const withConfig = (message: ReturnType<typeof userMessage>, url: string) =>
    ({
      ...sendRequest(message, { returnImmediately: true }),
      configuration: {
        acceptedOutputModes: [],
        returnImmediately: true,
        historyLength: undefined,
        taskPushNotificationConfig: { tenant: '', id: 'w', taskId: '', url, token: '', authentication: undefined },
      },
    }) as never;
  await assert.rejects(client.sendMessage(withConfig(refused, 'http://10.0.0.1/hook')), /push URL refused/);
  const dedup = await sql<{ n: number }>(env.databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.message_dedup WHERE message_id = $1`, [
    refused.messageId,
  ]);
  assert.equal(dedup[0].n, 0, 'no task, no command for a refused config');
  const accepted = userMessage('accepted hook');
  const task = (await client.sendMessage(withConfig(accepted, hookUrl('/with-task')))) as Task;
  // Stored in the same statement as the task and its command: no event of the task can come first.
  const [row] = await sql<{ n: number }>(env.databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.push_configs WHERE task_id = $1`, [
    task.id,
  ]);
  assert.equal(row.n, 1);
});

test('a config added mid-task gets the events after it, also when an earlier event is consumed again', async () => {
  const { task, cmd } = await taskWithHook('late config', 'early', '/early');
  const exec = cmd.identity.executionId;
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually('WORKING delivered to the first config', () => arrivals.some((a) => a.path === '/early' && a.id === `${exec}:0`));
  const client = await a2aClient(env.url, 'hook', 'JSONRPC');
  await client.createTaskPushNotificationConfig({
    tenant: '',
    id: 'late',
    taskId: task.id,
    url: hookUrl('/late'),
    token: '',
    authentication: undefined,
  });
  // WORKING again (a redelivery after a crash, say), then the end: the task's events are
  // projected in order, so once COMPLETED reached /late the repeated WORKING was handled before it.
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await worker.emit(cmd, [{ seq: 1, state: 'COMPLETED' }]);
  await eventually('COMPLETED delivered to both configs', () =>
    ['/early', '/late'].every((p) => arrivals.some((a) => a.path === p && a.id === `${exec}:1`)),
  );
  await new Promise((r) => setTimeout(r, 500)); // a delivery queued behind it would go out now
  assert.deepEqual(
    arrivals.filter((a) => a.path === '/late').map((a) => a.id),
    [`${exec}:1`],
    'an event from before the config was made is not delivered to it (it would arrive after later ones)',
  );
  assert.deepEqual(
    arrivals.filter((a) => a.path === '/early').map((a) => a.id),
    [`${exec}:0`, `${exec}:1`],
  );
});
