import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { collect, describe, streamingClient } from '../support/streaming.js';
import { freePort, spawnNode } from '../support/processes.js';
import { standInForTopicOwners } from '../support/topic-owners.js';
import { startRemoteAgent } from '../support/remote-agents/remote-process.js';
import { metricSample } from '../support/metrics.js';

// The bridge (apps/bridge) as a child process, SIGKILLed mid-task; a second bridge takes over.
const env = await startTestDispatcher('bridge-takeover');
const dedupRemote = await startRemoteAgent({ REMOTE_STREAMING: 'true', REMOTE_DEDUP: 'true', REMOTE_SLOW_MS: '6000' });
const plainRemote = await startRemoteAgent({ REMOTE_STREAMING: 'true', REMOTE_SLOW_MS: '6000' });
await publishAgents(env.kafka, env.topics, [agentRecord('remote-dedup'), agentRecord('remote-plain')]);
await standInForTopicOwners(env.prefix);
const OPS_TOKEN = 'ops-token-for-tests';

async function startBridge() {
  const port = await freePort();
  const proc = spawnNode('apps/bridge/dist/main.js', {
    KAFKA_BROKERS: env.env.KAFKA_BROKERS,
    TOPIC_PREFIX: env.prefix,
    DATABASE_URL: env.databaseUrl,
    AGENTS_PORT: String(port),
    AGENTS_OPS_TOKEN: OPS_TOKEN,
    // A dead bridge's lease and consumer session end soon, so the takeover comes within the spec.
    AGENTS_EXECUTION_LEASE_MS: '2000',
    AGENTS_CONSUMER_SESSION_TIMEOUT_MS: '6000',
    AGENTS_UNKNOWN_WAIT_MS: '500',
    BRIDGE_REMOTE_AGENTS: JSON.stringify([
      { id: 'remote-dedup', cardUrl: dedupRemote.cardUrl, allowLoopback: true, visibility: 'public', messageIdDedup: true },
      { id: 'remote-plain', cardUrl: plainRemote.cardUrl, allowLoopback: true, visibility: 'public' },
    ]),
  });
  const url = `http://127.0.0.1:${port}`;
  await eventually('the bridge is ready', async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok, 60000, 200);
  return { url, proc };
}

test('a bridge SIGKILLed mid-task: the next one resumes the one remote task, or reports an unknown outcome — never a second send', async () => {
  const first = await startBridge();
  const dedup = await streamingClient(env.url, 'remote-dedup', 'JSONRPC');
  const plain = await streamingClient(env.url, 'remote-plain', 'JSONRPC');
  // A: the remote task is recorded (its first artifact reached the caller) when the bridge dies.
  const streamA = collect(dedup.sendMessageStream(sendRequest(userMessage('slow one'))));
  await eventually('the first half reached the caller', () => describe(streamA.events).includes('artifact:one'));
  // B: the message reached a remote that has said nothing yet, so no remote task id is recorded.
  const b = (await plain.sendMessage(sendRequest(userMessage('mute one'), { returnImmediately: true }))) as Task;
  await eventually('the plain remote received B', async () => (await plainRemote.stats()).messages.some((m) => m.text === 'mute one'));
  // C: the same on a remote that deduplicates messageId: the next bridge sends the same id again.
  const c = (await dedup.sendMessage(sendRequest(userMessage('mute two'), { returnImmediately: true }))) as Task;
  await eventually('the dedup remote received C', async () => (await dedupRemote.stats()).messages.some((m) => m.text === 'mute two'));
  first.proc.child.kill('SIGKILL');
  await first.proc.exited;
  const second = await startBridge();

  await streamA.done;
  const seen = describe(streamA.events);
  // No gap: everything the remote said reached the caller, in order, across the takeover (the
  // resumed relay may repeat the last progress and the first artifact, under the same artifact id).
  assert.deepEqual(seen.slice(-2), ['artifact:two', 'status:COMPLETED'], seen.join(', '));
  assert.ok(seen.indexOf('artifact:one') < seen.indexOf('artifact:two'), seen.join(', '));
  const aTask = streamA.events[0]!.payload?.$case === 'task' ? streamA.events[0]!.payload.value : undefined;
  const stored = await dedup.getTask({ tenant: '', id: aTask!.id });
  assert.deepEqual(
    stored.artifacts.map((x) => x.name),
    ['part-1', 'part-2'],
    'each remote artifact once',
  );
  const a = await dedupRemote.stats();
  assert.equal(a.messages.filter((m) => m.text === 'slow one').length, 1, 'one send');
  const doneC = await eventually(
    'C completes',
    async () => {
      const t = await dedup.getTask({ tenant: '', id: c.id });
      return t.status?.state === TaskState.TASK_STATE_COMPLETED || t.status?.state === TaskState.TASK_STATE_FAILED ? t : undefined;
    },
    60000,
  );
  assert.equal(doneC.status?.state, TaskState.TASK_STATE_COMPLETED);
  const afterC = await dedupRemote.stats();
  // The resend reached the remote as the same messageId and found the first task: still one task each.
  assert.equal(afterC.tasksCreated, 2, 'one remote task for A and one for C');
  assert.equal(afterC.messages.filter((m) => m.text === 'mute two').length, 1);
  assert.ok(afterC.deduplicated >= 1, 'the next bridge resent the same messageId');

  const ended = await eventually(
    'B ends',
    async () => {
      const t = await plain.getTask({ tenant: '', id: b.id });
      return t.status?.state === TaskState.TASK_STATE_FAILED || t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
    },
    60000,
  );
  assert.equal(ended.status?.state, TaskState.TASK_STATE_FAILED);
  const text = ended.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') ?? '';
  assert.match(text, /outcome of the message to the remote agent is unknown/);
  assert.equal((await plainRemote.stats()).messages.filter((m) => m.text === 'mute one').length, 1, 'never sent twice');
  const ops = (await (await fetch(`${second.url}/ops/unknowns`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } })).json()) as {
    unknowns: Array<{ key: string; taskId: string; tool: string }>;
  };
  const open = ops.unknowns.find((u) => u.taskId === b.id);
  assert.ok(open, JSON.stringify(ops));
  assert.equal(open.tool, 'a2a__remote-plain__SendMessage');
  assert.match(open.key, /^mesh-acme:/);
  // Counted like an unknown tool effect (the ops read above refreshed the gauge).
  assert.equal(await metricSample(second.url, 'mesh_unknown_outcomes_open', { tool: 'a2a__remote-plain__SendMessage' }), 1);
});
