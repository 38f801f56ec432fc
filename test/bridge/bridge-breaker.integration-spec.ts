import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type Task } from '@a2a-js/sdk';
import { loadAgentsConfig, remoteAgent, startAgents } from '@mesh/agent-runtime';
import { eventually } from '../support/infra.js';
import { startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { streamingClient } from '../support/streaming.js';
import { startRemoteAgent } from '../support/remote-agents/remote-process.js';
import { client as directoryClient, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';

// Remote down: the breaker opens, the bridge stops announcing the agent, the directory shows it
// unhealthy, admission refuses new tasks, and a queued task fails at its deadline. The real flow:
// the bridge registers the remote's own card with the directory under the team's token.
const env = await startTestDispatcher('bridge-breaker', {}, { DISPATCHER_REQUIRE_HEALTHY_WORKER: 'true' });
const { dir } = await startTestDirectory('bridge-breaker', { TOPIC_PREFIX: env.prefix, DIRECTORY_HEARTBEAT_TTL_MS: '1500' });
const remote = await startRemoteAgent({ REMOTE_STREAMING: 'true' });
const bridge = await startAgents(
  {
    ...loadAgentsConfig({
      KAFKA_BROKERS: env.env.KAFKA_BROKERS,
      TOPIC_PREFIX: env.prefix,
      DATABASE_URL: env.databaseUrl,
      AGENTS_DIRECTORY_URL: dir.url,
      AGENTS_DIRECTORY_TOKEN: KEYS.acme,
      AGENTS_HEARTBEAT_INTERVAL_MS: '500',
    }),
    AGENTS_PORT: 0,
  },
  [
    await remoteAgent({
      id: 'remote-down',
      cardUrl: remote.cardUrl,
      allowLoopback: true,
      visibility: 'tenant',
      breakerFailures: 2,
      breakerOpenMs: 600_000,
    }),
  ],
);
after(() => bridge.stop());
const api = directoryClient(dir.url);
const healthy = async () => (await api(KEYS.acme, 'GET', '/v1/agents/remote-down')).body.healthy as boolean;

test('the directory serves the remote card, pointing at the dispatcher, never at the remote', async () => {
  const served = await api(KEYS.acme, 'GET', '/v1/agents/remote-down/card');
  assert.equal(served.status, 200, JSON.stringify(served.body));
  assert.equal(served.body.name, 'Remote streaming agent');
  assert.ok(!JSON.stringify(served.body).includes(remote.url), JSON.stringify(served.body));
});

test('remote down: the breaker opens, the agent turns unhealthy, new tasks are refused and a queued one fails at its deadline', async () => {
  await eventually('the bridge announces the agent', healthy);
  const caller = await eventually('the dispatcher serves the agent', () => streamingClient(env.url, 'remote-down', 'JSONRPC'));
  const ok = await eventually('a task completes while the remote is up', async () => {
    const t = (await caller.sendMessage(sendRequest(userMessage('while up')))) as Task;
    return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
  });
  assert.ok(ok);

  remote.proc.child.kill('SIGKILL');
  await remote.proc.exited;
  const queued = (await caller.sendMessage(
    sendRequest(userMessage('while down', { metadata: { deadlineUnixMs: Date.now() + 8000 } }), { returnImmediately: true }),
  )) as Task;
  await eventually('the directory shows the agent unhealthy', async () => !(await healthy()), 30000);
  await eventually(
    'admission refuses new tasks',
    async () => {
      try {
        await caller.sendMessage(sendRequest(userMessage('refused'), { returnImmediately: true }));
        return false;
      } catch {
        return true;
      }
    },
    30000,
  );
  const ended = await eventually(
    'the queued task ends',
    async () => {
      const t = await caller.getTask({ tenant: '', id: queued.id });
      return t.status?.state === TaskState.TASK_STATE_FAILED || t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
    },
    30000,
  );
  assert.equal(ended.status?.state, TaskState.TASK_STATE_FAILED);
  const text = ended.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') ?? '';
  assert.match(text, /deadline/i);
});
