import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, sql } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher, type DispatcherEnv } from '../support/dispatcher-harness.js';
import { ensureTopics } from '@mesh/bus';
import { startEchoWorker } from '../support/echo-worker.js';
import { jsonMessage } from '../support/a2a-fixtures.js';
import { metricSample } from '../support/metrics.js';
import { setMaxMessageBytes } from '../support/delegating-parent.js';

// A command is measured against its topic's real limit at accept, and a row the broker still
// refuses (a limit lowered after it was read) fails its own task without holding the others back.
const env: DispatcherEnv = await startTestDispatcher(
  'command-size',
  {},
  // The limits are read once here (a refresh would notice the lowered limit and refuse at accept).
  { OUTBOX_LIMITS_REFRESH_MS: '3600000', DISPATCHER_MAX_TASK_BYTES: '300000' },
);
await publishAgents(env.kafka, env.topics, [agentRecord('echo'), agentRecord('narrow')]);
const echo = await startEchoWorker(env.kafka, env.topics, 'echo');
const narrow = await startEchoWorker(env.kafka, env.topics, 'narrow');
after(() => Promise.all([echo.stop(), narrow.stop()]));
await eventually('cards served', async () => (await fetch(`${env.url}/a2a/narrow/.well-known/agent-card.json`)).ok);

interface RpcAnswer {
  result?: { task?: { id: string; status: { state: string } } };
  error?: { code: number; message: string; data?: Array<{ reason?: string; metadata?: Record<string, string> }> };
}

/** `rewrite` edits the body's text (JSON.stringify writes 1e20 out in full; a caller need not). */
async function send(
  agent: string,
  message: Record<string, unknown>,
  token = 'demo-acme',
  blocking = false,
  rewrite = (body: string) => body,
): Promise<RpcAnswer> {
  const res = await fetch(`${env.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: rewrite(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message, configuration: { returnImmediately: !blocking } },
      }),
    ),
  });
  return (await res.json()) as RpcAnswer;
}

const stateOf = async (taskId: string) =>
  (await sql<{ state: string }>(env.databaseUrl, `SELECT state FROM dispatcher.tasks WHERE id = $1`, [taskId]))[0]?.state;

test('a message whose command the topic would refuse is refused at accept, with the sizes, and nothing is stored', async () => {
  const cases = {
    // Just under the 1 MiB body limit: the command adds its envelope and headers.
    'a text part near the body limit': { message: jsonMessage('x'.repeat(1_048_000)), rewrite: undefined },
    // 300 KB of `1e20` as sent: the command writes each number out in full, over 4 times longer.
    'numbers the command writes out longer': {
      message: { ...jsonMessage('numbers'), parts: [{ data: { n: Array(60_000).fill(7) } }] },
      rewrite: (body: string) => body.replace(/\b7\b/g, '1e20'),
    },
  };
  for (const [name, { message, rewrite }] of Object.entries(cases)) {
    const answer = await send('echo', message, 'demo-acme', false, rewrite);
    assert.equal(answer.error?.code, -32602, `${name}: ${JSON.stringify(answer).slice(0, 300)}`);
    const info = answer.error?.data?.find((d) => d.metadata?.reason === 'COMMAND_TOO_LARGE');
    assert.ok(info, `${name}: ${JSON.stringify(answer.error).slice(0, 300)}`);
    assert.ok(Number(info.metadata!.commandBytes) > Number(info.metadata!.limitBytes), name);
    const stored = await sql(env.databaseUrl, `SELECT 1 FROM dispatcher.message_dedup WHERE message_id = $1`, [message.messageId]);
    assert.equal(stored.length, 0, `${name}: nothing stored`);
  }
  // Everyone's work goes on.
  const ok = await send('echo', jsonMessage('after the refusals'), 'demo-globex', true);
  assert.equal(ok.result?.task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(ok));
});

test('a command the broker refuses fails its own task with the reason, is counted, and holds no other back', async () => {
  // The topic's limit is read at the first accept for it (the topic exists: its worker created it).
  const first = await send('narrow', jsonMessage('small'), 'demo-acme', true);
  assert.equal(first.result?.task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(first));
  // An operator lowers it afterwards.
  await setMaxMessageBytes(env.kafka, env.topics.commands('narrow'), 20_000);
  const echoedBefore = echo.commands.length;
  // Sent together so the refused command may share a batch with the others.
  const answers = await Promise.all([
    send('narrow', jsonMessage('y'.repeat(60_000))),
    ...Array.from({ length: 10 }, (_, i) => send('echo', jsonMessage(`neighbour ${i}`), i % 2 ? 'demo-globex' : 'demo-acme')),
  ]);
  const [big, ...others] = answers.map((a) => a.result?.task?.id);
  assert.ok(big && others.every(Boolean), JSON.stringify(answers).slice(0, 500));
  await eventually('the refused turn failed', async () => (await stateOf(big)) === 'TASK_STATE_FAILED', 30_000);
  const [failed] = await sql<{ task: { status: { message: { metadata: Record<string, string>; parts: Array<{ text: string }> } } } }>(
    env.databaseUrl,
    `SELECT task FROM dispatcher.tasks WHERE id = $1`,
    [big],
  );
  assert.equal(failed.task.status.message.metadata['mesh/reason'], 'COMMAND_UNDELIVERABLE');
  assert.match(failed.task.status.message.parts[0].text, /deliver/);
  for (const id of others)
    await eventually(`neighbour ${id} completed`, async () => (await stateOf(id!)) === 'TASK_STATE_COMPLETED', 30_000);
  // The relay did not roll its batch back and retry it: each neighbour went out once, or twice
  // when it shared the refused request (the broker's answer does not say which partition refused).
  const sent = echo.commands.slice(echoedBefore).map((c) => c.identity.taskId);
  for (const id of others)
    assert.ok([1, 2].includes(sent.filter((t) => t === id).length), `${id} sent ${sent.filter((t) => t === id).length}x`);
  assert.ok(
    !narrow.commands.some((c) => c.kind === 'task.run' && c.identity.taskId === big),
    'the refused command never reached its worker',
  );
  assert.equal(await metricSample(env.url, 'mesh_outbox_undeliverable_total', { kind: 'task.run' }), 1);
  const left = await sql(env.databaseUrl, `SELECT 1 FROM dispatcher.outbox`);
  assert.equal(left.length, 0, 'the outbox is empty');
});

test('a follow-up turn that would grow its task past the bound is refused, and the task stays as it was', async () => {
  const asked = await send('echo', jsonMessage(`need-input ${'z'.repeat(200_000)}`), 'demo-acme', true);
  const task = asked.result?.task;
  assert.equal(task?.status.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(asked).slice(0, 300));
  const more = await send('echo', jsonMessage('w'.repeat(150_000), { taskId: task!.id }));
  assert.equal(more.error?.code, -32602, JSON.stringify(more).slice(0, 300));
  assert.ok(
    more.error?.data?.some((d) => d.metadata?.reason === 'TASK_TOO_LARGE'),
    JSON.stringify(more.error),
  );
  assert.equal(await stateOf(task!.id), 'TASK_STATE_INPUT_REQUIRED');
  // A small answer still continues the task.
  const answered = await send('echo', jsonMessage('fine', { taskId: task!.id }), 'demo-acme', true);
  assert.equal(answered.result?.task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(answered).slice(0, 300));
});

test("a command whose topic does not exist waits in the outbox, holds no other back, and goes once the topic's owner creates it", async () => {
  // Published to the cards topic without its command topic (a cluster that lost it, say): the
  // dispatcher does not create it, the directory does.
  const producer = env.kafka.producer();
  await producer.connect();
  await producer.send({ topic: env.topics.cards(), messages: [{ key: 'ghost', value: JSON.stringify(agentRecord('ghost')) }] });
  await producer.disconnect();
  await eventually('ghost card served', async () => (await fetch(`${env.url}/a2a/ghost/.well-known/agent-card.json`)).ok);
  const [ghost, ...others] = await Promise.all([
    send('ghost', jsonMessage('waiting')),
    ...Array.from({ length: 5 }, (_, i) => send('echo', jsonMessage(`beside the ghost ${i}`))),
  ]).then((answers) => answers.map((a) => a.result!.task!.id));
  for (const id of others) await eventually(`${id} completed`, async () => (await stateOf(id)) === 'TASK_STATE_COMPLETED', 30_000);
  const waiting = await sql(env.databaseUrl, `SELECT 1 FROM dispatcher.outbox WHERE topic = $1`, [env.topics.commands('ghost')]);
  assert.equal(waiting.length, 1, 'the command waits in the outbox');
  assert.equal(await stateOf(ghost), 'TASK_STATE_SUBMITTED');
  // Its owner creates the topic; a worker picks the command up.
  await ensureTopics(env.kafka, [{ name: env.topics.commands('ghost'), partitions: 2 }]);
  const worker = await startEchoWorker(env.kafka, env.topics, 'ghost');
  try {
    await eventually('the waiting command delivered', async () => (await stateOf(ghost)) === 'TASK_STATE_COMPLETED', 30_000);
  } finally {
    await worker.stop();
  }
});
