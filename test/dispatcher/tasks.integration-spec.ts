import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { TaskNotCancelableError, TaskNotFoundError, RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { eventually, sql } from '../support/infra.js';
import { a2aClient, agentRecord, BINDINGS, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startEchoWorker } from '../support/echo-worker.js';

const env = await startTestDispatcher('tasks');
await publishAgents(env.kafka, env.topics, [agentRecord('echo'), agentRecord('secret', { visibility: 'private' })]);
const worker = await startEchoWorker(env.kafka, env.topics, 'echo');
after(() => worker.stop());
await eventually('echo served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);

const count = async (table: string, where = 'true', args: unknown[] = []) =>
  (await sql<{ n: number }>(env.databaseUrl, `SELECT count(*)::int AS n FROM dispatcher.${table} WHERE ${where}`, args))[0].n;

for (const binding of BINDINGS) {
  test(`${binding}: multi-turn — INPUT_REQUIRED, then a follow-up on the same task completes it; a terminal task refuses more`, async () => {
    const client = await a2aClient(env.url, 'echo', binding);
    const first = (await client.sendMessage(sendRequest(userMessage('need-input: paint it')))) as Task;
    assert.equal(first.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const ask = first.status?.message?.parts[0]?.content;
    assert.deepEqual(ask, { $case: 'text', value: 'which colour?' });

    const second = (await client.sendMessage(sendRequest(userMessage('blue', { taskId: first.id, contextId: first.contextId })))) as Task;
    assert.equal(second.id, first.id);
    assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(artifactText(second), 'echo: blue');
    const users = second.history
      .filter((m) => m.role === 1)
      .map((m) => (m.parts[0]?.content?.$case === 'text' ? m.parts[0].content.value : ''));
    assert.deepEqual(users, ['need-input: paint it', 'blue']);
    const execs = await sql<{ execution_id: string }>(
      env.databaseUrl,
      `SELECT execution_id FROM dispatcher.executions WHERE task_id = $1 ORDER BY turn`,
      [first.id],
    );
    assert.deepEqual(
      execs.map((e) => e.execution_id),
      [`acme:${first.id}:1`, `acme:${first.id}:2`],
    );

    await assert.rejects(client.sendMessage(sendRequest(userMessage('again', { taskId: first.id }))), UnsupportedOperationError);
    await assert.rejects(client.cancelTask({ id: first.id, tenant: '', metadata: undefined }), TaskNotCancelableError);
  });

  test(`${binding}: a follow-up with another contextId, or to an unknown task, is refused`, async () => {
    const client = await a2aClient(env.url, 'echo', binding);
    const first = (await client.sendMessage(sendRequest(userMessage('need-input: x')))) as Task;
    await assert.rejects(
      client.sendMessage(sendRequest(userMessage('y', { taskId: first.id, contextId: 'another-context' }))),
      RequestMalformedError,
    );
    await assert.rejects(
      client.sendMessage(sendRequest(userMessage('y', { taskId: '00000000-0000-4000-8000-000000000000' }))),
      TaskNotFoundError,
    );
    // Refusals leave no trace: the same follow-up can still be sent correctly.
    const ok = (await client.sendMessage(sendRequest(userMessage('y', { taskId: first.id })))) as Task;
    assert.equal(ok.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  test(`${binding}: the same messageId with the same content returns the same task; with other content it is refused`, async () => {
    const client = await a2aClient(env.url, 'echo', binding);
    const message = userMessage('dedup me');
    const a = (await client.sendMessage(sendRequest(message))) as Task;
    const b = (await client.sendMessage(sendRequest(message))) as Task;
    assert.equal(b.id, a.id);
    assert.equal(b.status?.state, TaskState.TASK_STATE_COMPLETED);
    const other = { ...message, parts: userMessage('something else').parts };
    await assert.rejects(
      client.sendMessage(sendRequest(other)),
      (err: Error) => err instanceof RequestMalformedError && /already used/.test(err.message),
    );
    assert.equal(await count('tasks', `task->'history'->0->>'messageId' = $1`, [message.messageId]), 1);
    assert.equal(worker.commands.filter((c) => c.identity.messageId === message.messageId).length, 1);
  });

  test(`${binding}: a blocking send returns the task as it is when the request's deadline passes`, async () => {
    const client = await a2aClient(env.url, 'echo', binding);
    const task = (await client.sendMessage(sendRequest(userMessage('silent')), {
      serviceParameters: { 'x-request-timeout-ms': '300' },
    })) as Task;
    assert.ok([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status!.state));
    const canceled = await client.cancelTask({ id: task.id, tenant: '', metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    await eventually('cancel command produced', () =>
      worker.commands.some((c) => c.kind === 'task.cancel' && c.identity.taskId === task.id),
    );
    // Canceling again is idempotent.
    assert.equal((await client.cancelTask({ id: task.id, tenant: '', metadata: undefined })).status?.state, TaskState.TASK_STATE_CANCELED);
  });
}

test('concurrent retries of one message create one task and one command', async () => {
  const client = await a2aClient(env.url, 'echo', 'JSONRPC');
  const message = userMessage('racing');
  const results = (await Promise.all(
    Array.from({ length: 10 }, () => client.sendMessage(sendRequest(message, { returnImmediately: true }))),
  )) as Task[];
  assert.equal(new Set(results.map((t) => t.id)).size, 1);
  await eventually('command delivered', () => worker.commands.some((c) => c.identity.messageId === message.messageId));
  assert.equal(await count('message_dedup', 'message_id = $1', [message.messageId]), 1);
  assert.equal(await count('tasks', 'id = $1', [results[0].id]), 1);
  assert.equal(worker.commands.filter((c) => c.identity.messageId === message.messageId).length, 1);
});

test('concurrent retries of one follow-up add one turn and one command, and none is refused', async () => {
  const client = await a2aClient(env.url, 'echo', 'JSONRPC');
  const first = (await client.sendMessage(sendRequest(userMessage('need-input: race the answer')))) as Task;
  assert.equal(first.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const answer = userMessage('green', { taskId: first.id });
  // The twins that wait for the task's row lock find the task no longer asking for input: they
  // must answer as retries of the accepted message, not refuse it.
  const results = (await Promise.all(
    Array.from({ length: 10 }, () => client.sendMessage(sendRequest(answer, { returnImmediately: true }))),
  )) as Task[];
  assert.deepEqual(new Set(results.map((t) => t.id)), new Set([first.id]));
  await eventually('command delivered', () => worker.commands.some((c) => c.identity.messageId === answer.messageId));
  assert.equal(await count('message_dedup', 'message_id = $1', [answer.messageId]), 1);
  assert.equal(await count('executions', 'task_id = $1', [first.id]), 2);
  assert.equal(worker.commands.filter((c) => c.identity.messageId === answer.messageId).length, 1);
});

test('COMPLETED without an artifact is recorded as FAILED, never as success', async () => {
  const client = await a2aClient(env.url, 'echo', 'HTTP+JSON');
  const task = (await client.sendMessage(sendRequest(userMessage('no-artifact')))) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_FAILED);
  assert.equal(task.artifacts.length, 0);
});

test('GetTask historyLength and ListTasks: newest first, cursor pages, filters', async () => {
  const client = await a2aClient(env.url, 'echo', 'HTTP+JSON');
  const ctx = `ctx-${Date.now()}`;
  const sent: Task[] = [];
  for (let i = 0; i < 5; i++) sent.push((await client.sendMessage(sendRequest(userMessage(`list ${i}`, { contextId: ctx })))) as Task);
  const t0 = await client.getTask({ id: sent[0].id, tenant: '', historyLength: 0 });
  assert.equal(t0.history.length, 0);
  const t1 = await client.getTask({ id: sent[0].id, tenant: '', historyLength: 1 });
  assert.equal(t1.history.length, 1);
  for (const binding of BINDINGS) {
    const c = await a2aClient(env.url, 'echo', binding);
    const seen: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const page = await c.listTasks({
        tenant: '',
        contextId: ctx,
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageSize: 2,
        pageToken,
        includeArtifacts: false,
        historyLength: undefined,
        statusTimestampAfter: undefined,
      });
      assert.equal(page.totalSize, 5);
      assert.equal(page.pageSize, page.tasks.length, 'pageSize: the tasks this page holds (2, 2, 1)');
      seen.push(...page.tasks.map((t) => t.id));
      pageToken = page.nextPageToken;
      pages += 1;
    } while (pageToken && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual(
      seen,
      [...sent].reverse().map((t) => t.id),
      `${binding}: newest status first, each task once`,
    );
    const completed = await c.listTasks({
      tenant: '',
      contextId: ctx,
      status: TaskState.TASK_STATE_COMPLETED,
      pageSize: 50,
      pageToken: '',
      includeArtifacts: true,
      historyLength: undefined,
      statusTimestampAfter: undefined,
    });
    assert.equal(completed.tasks.length, 5);
    assert.ok(completed.tasks.every((t) => artifactText(t).startsWith('echo: list')));
  }
});

test('an empty ListTasks page says pageSize 0 (not the size asked for) on both bindings, on the wire', async () => {
  const headers = { authorization: 'Bearer demo-acme', 'a2a-version': '1.0', 'content-type': 'application/json' };
  const contextId = `empty-${Date.now()}`;
  const rest = await rawRequest(`${env.url}/a2a/echo/tasks?contextId=${contextId}&pageSize=10`, { method: 'GET', headers });
  const rpc = await rawRequest(`${env.url}/a2a/echo`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { contextId, pageSize: 10 } }),
  });
  for (const page of [JSON.parse(rest.body), (JSON.parse(rpc.body) as { result: unknown }).result]) {
    assert.deepEqual(page, { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 });
  }
});

test("tenants never see each other's tasks, on every operation", async () => {
  const acme = await a2aClient(env.url, 'echo', 'JSONRPC', 'demo-acme');
  const task = (await acme.sendMessage(sendRequest(userMessage('need-input: mine')))) as Task;
  for (const binding of BINDINGS) {
    const globex = await a2aClient(env.url, 'echo', binding, 'demo-globex');
    await assert.rejects(globex.getTask({ id: task.id, tenant: '', historyLength: undefined }), TaskNotFoundError);
    await assert.rejects(globex.cancelTask({ id: task.id, tenant: '', metadata: undefined }), TaskNotFoundError);
    await assert.rejects(globex.sendMessage(sendRequest(userMessage('hijack', { taskId: task.id }))), TaskNotFoundError);
    const list = await globex.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 100,
      pageToken: '',
      includeArtifacts: false,
      historyLength: undefined,
      statusTimestampAfter: undefined,
    });
    assert.ok(!list.tasks.some((t) => t.id === task.id));
    // The same messageId from another tenant is another message, not a duplicate.
    const mine = (await globex.sendMessage(sendRequest(userMessage('hello', { messageId: task.history[0].messageId })))) as Task;
    assert.notEqual(mine.id, task.id);
  }
  // acme's task is untouched.
  assert.equal(
    (await acme.getTask({ id: task.id, tenant: '', historyLength: undefined })).status?.state,
    TaskState.TASK_STATE_INPUT_REQUIRED,
  );
});

test('a private agent is invisible to other tenants: no card, no client', async () => {
  const card = await fetch(`${env.url}/a2a/secret/.well-known/agent-card.json`, { headers: { authorization: 'Bearer demo-globex' } });
  assert.equal(card.status, 404);
  const anonymous = await fetch(`${env.url}/a2a/secret/.well-known/agent-card.json`);
  assert.equal(anonymous.status, 404);
  const owner = await fetch(`${env.url}/a2a/secret/.well-known/agent-card.json`, { headers: { authorization: 'Bearer demo-acme' } });
  assert.equal(owner.status, 200);
  await assert.rejects(a2aClient(env.url, 'secret', 'JSONRPC', 'demo-globex'), /404/);
});
