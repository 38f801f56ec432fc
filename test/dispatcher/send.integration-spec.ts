import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually, sql } from '../support/infra.js';
import {
  a2aClient,
  agentRecord,
  BINDINGS,
  publishAgents,
  rawRequest,
  startTestDispatcher,
  type DispatcherEnv,
} from '../support/dispatcher-harness.js';
import { startEchoWorker, type EchoWorker } from '../support/echo-worker.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';

// Top level, not in before(): the harness registers after() hooks that must belong to the file.
const env: DispatcherEnv = await startTestDispatcher('send');
await publishAgents(env.kafka, env.topics, [
  agentRecord('echo'),
  agentRecord('own', { visibility: 'tenant' }),
  agentRecord('mine', { visibility: 'private' }),
]);
const worker: EchoWorker = await startEchoWorker(env.kafka, env.topics, 'echo');
after(() => worker.stop());
// The catalog is live: wait until the dispatcher serves the agent's card.
await eventually('echo card served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);

test('the card is served from the directory record with interfaces pointing at the dispatcher, cached with an ETag', async () => {
  const res = await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  const card = (await res.json()) as {
    name: string;
    supportedInterfaces: Array<{ url: string; protocolBinding: string; protocolVersion: string }>;
  };
  assert.equal(card.name, 'Agent echo');
  assert.deepEqual(
    card.supportedInterfaces.map((i) => [i.protocolBinding, i.url, i.protocolVersion]),
    [
      ['JSONRPC', `${env.url}/a2a/echo`, '1.0'],
      ['HTTP+JSON', `${env.url}/a2a/echo`, '1.0'],
      ['JSONRPC', `${env.url}/a2a/echo`, '0.3'],
      ['HTTP+JSON', `${env.url}/a2a/echo`, '0.3'],
    ],
  );
  const etag = res.headers.get('etag');
  assert.ok(etag);
  assert.match(res.headers.get('cache-control') ?? '', /max-age=\d+/);
  // node:http, not fetch: fetch turns a conditional request into Cache-Control: no-cache.
  const again = await rawRequest(`${env.url}/a2a/echo/.well-known/agent-card.json`, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
});

test("a card only its tenant sees is private to the caller's credential: no shared cache keeps it", async () => {
  await eventually(
    'cards served',
    async () =>
      (await rawRequest(`${env.url}/a2a/mine/.well-known/agent-card.json`, { headers: { authorization: 'Bearer demo-acme' } })).status ===
      200,
  );
  for (const agent of ['own', 'mine']) {
    for (const version of [{}, { 'a2a-version': '0.3' }]) {
      const r = await rawRequest(`${env.url}/a2a/${agent}/.well-known/agent-card.json`, {
        headers: { authorization: 'Bearer demo-acme', ...version },
      });
      assert.equal(r.status, 200);
      const cache = String(r.headers['cache-control']);
      assert.match(cache, /^private, max-age=\d+$/, `${agent} ${JSON.stringify(version)}: ${cache}`);
      assert.match(String(r.headers.vary), /\bAuthorization\b/);
      assert.match(String(r.headers.vary), /\bA2A-Version\b/);
    }
    // Another tenant does not see it at all.
    const other = await rawRequest(`${env.url}/a2a/${agent}/.well-known/agent-card.json`, {
      headers: { authorization: 'Bearer demo-globex' },
    });
    assert.equal(other.status, 404);
  }
  // A public card stays cacheable by anyone.
  const open = await rawRequest(`${env.url}/a2a/echo/.well-known/agent-card.json`);
  assert.match(String(open.headers['cache-control']), /^public, max-age=\d+$/);
});

for (const binding of BINDINGS) {
  test(`${binding}: a blocking send goes through Kafka to the worker and comes back COMPLETED with its artifact`, async () => {
    const client = await a2aClient(env.url, 'echo', binding);
    const result = await client.sendMessage(sendRequest(userMessage(`hello over ${binding}`)));
    assert.ok('id' in result, 'a task, not a message');
    const task = result as Task;
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(artifactText(task), `echo: hello over ${binding}`);
    const fetched = await client.getTask({ id: task.id, tenant: '', historyLength: undefined });
    assert.equal(fetched.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(artifactText(fetched), `echo: hello over ${binding}`);
    const [row] = await sql<{ execution_id: string }>(
      env.databaseUrl,
      `SELECT execution_id FROM dispatcher.executions WHERE task_id = $1`,
      [task.id],
    );
    assert.equal(row.execution_id, `acme:${task.id}:1`);
  });

  test(`${binding}: returnImmediately answers SUBMITTED at once, the task completes later`, async () => {
    const client = await a2aClient(env.url, 'echo', binding);
    const task = (await client.sendMessage(sendRequest(userMessage('later'), { returnImmediately: true }))) as Task;
    assert.equal(task.status?.state, TaskState.TASK_STATE_SUBMITTED);
    const done = await eventually('task completes', async () => {
      const t = await client.getTask({ id: task.id, tenant: '', historyLength: undefined });
      return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
    });
    assert.equal(artifactText(done), 'echo: later');
  });
}

test('the command carries every identity header, the channel key and never the bearer token', async () => {
  const client = await a2aClient(env.url, 'echo', 'JSONRPC');
  const task = (await client.sendMessage(sendRequest(userMessage('headers')))) as Task;
  const cmd = worker.commands.find((c) => c.identity.taskId === task.id);
  assert.ok(cmd);
  assert.equal(cmd.kind, 'task.run');
  assert.deepEqual(
    { ...cmd.identity },
    {
      tenant: 'acme',
      agentId: 'echo',
      taskId: task.id,
      contextId: task.contextId,
      messageId: cmd.identity.messageId,
      executionId: `acme:${task.id}:1`,
      subject: 'alice',
      actor: cmd.identity.actor,
      // DISPATCHER_START_TIMEOUT_MS (24 h) after the accept.
      startByUnixMs: cmd.identity.startByUnixMs,
      // The caller's scopes (a development key holds every scope): what a delegation can narrow.
      scopes: ['*'],
    },
  );
  assert.ok(Math.abs(cmd.identity.startByUnixMs! - (Date.now() + 86_400_000)) < 60_000);
  assert.ok(!JSON.stringify(cmd).includes('demo-acme'), 'the caller token never travels on Kafka');
});
