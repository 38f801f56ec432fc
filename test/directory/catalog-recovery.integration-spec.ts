import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { logLevel } from 'kafkajs';
import { DEMO_API_KEYS } from '@mesh/auth';
import { createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { eventually, freshDatabase } from '../support/infra.js';
import { a2aClient } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { freePort, spawnNode, type SpawnedProcess } from '../support/processes.js';
import { startPrivateKafka } from '../support/private-kafka.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

// A broker that comes back empty (a lost cluster, a data dir formatted afresh) while Postgres keeps
// the directory. A running directory and dispatchers (their own processes) on a
// private broker; the broker is killed and started on an empty data dir. The directory must bring
// the cards topic (and the command topics) back from its database, and dispatchers, the one that
// kept running and a fresh one, must serve every agent again.

const broker = await startPrivateKafka();
const dispatchers: SpawnedProcess[] = [];
const { dir, prefix } = await startTestDirectory('catalog-recovery', {
  KAFKA_BROKERS: broker.brokers.join(','),
  DIRECTORY_RECONCILE_INTERVAL_MS: '1000',
});
// after() hooks run in order: the directory (registered above) stops first, then the rest.
after(async () => {
  for (const d of dispatchers) if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL');
  await Promise.all(dispatchers.map((d) => d.exited));
  await broker.destroy();
});
const topics = new TopicNames(prefix);
const api = client(dir.url);
const dispatcherDb = await freshDatabase('catalog-recovery-dispatcher');

/** Agents as their owners see them: two live ones (tenant and public), one retired. */
const AGENTS = [
  { id: 'rc-echo', key: KEYS.acme, visibility: 'tenant' },
  { id: 'rc-public', key: KEYS.globex, visibility: 'public' },
] as const;
for (const a of AGENTS) {
  const r = await api(a.key, 'POST', '/v1/agents', { id: a.id, visibility: a.visibility, card: card(`Recovery ${a.id}`) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}
assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'rc-retired', card: card('Recovery retired') })).status, 201);
assert.equal((await api(KEYS.acme, 'DELETE', '/v1/agents/rc-retired')).status, 200);

async function startDispatcher(): Promise<string> {
  const port = await freePort();
  const d = spawnNode('apps/dispatcher/dist/main.js', {
    KAFKA_BROKERS: broker.brokers.join(','),
    TOPIC_PREFIX: prefix,
    DATABASE_URL: dispatcherDb,
    DISPATCHER_PORT: String(port),
    AUTH_API_KEYS: DEMO_API_KEYS,
    EVENTS_TOPIC_PARTITIONS: '3',
    DISPATCHER_REQUIRE_HEALTHY_WORKER: 'false',
    LOG_LEVEL: 'warn',
  });
  dispatchers.push(d);
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    'dispatcher ready',
    async () => {
      if (d.child.exitCode !== null) throw new Error(`the dispatcher exited: ${d.stderr().slice(-2000)}`);
      return (await fetch(`${url}/livez`)).ok;
    },
    60000,
    200,
  );
  return url;
}

/** The dispatcher serves the agent's card to its owner and accepts a SendMessage for it. */
async function serves(url: string, id: string, key: string): Promise<boolean> {
  const cardRes = await fetch(`${url}/a2a/${id}/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${key}` } });
  if (!cardRes.ok) return false;
  const a2a = await a2aClient(url, id, 'JSONRPC', key);
  const task = await a2a.sendMessage(sendRequest(userMessage(`hello ${id}`), { returnImmediately: true }));
  return 'id' in task && typeof task.id === 'string' && task.id.length > 0;
}

/** Whether the dispatcher says the retired agent is gone (never served as live). */
async function refusesRetired(url: string): Promise<boolean> {
  const res = await fetch(`${url}/a2a/rc-retired/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${KEYS.acme}` } });
  return res.status >= 400 && res.status < 500;
}

test('after the broker restarts on an empty data dir, a running and a fresh dispatcher serve every agent again', async (t) => {
  const t0 = Date.now();
  const running = await startDispatcher();
  for (const a of AGENTS) await eventually(`${a.id} served before the wipe`, () => serves(running, a.id, a.key), 30000, 200);
  assert.ok(await refusesRetired(running));

  await broker.stop('SIGKILL');
  await broker.startEmpty();

  const kafka = createKafka({ brokers: broker.brokers, clientId: 'recovery-check' }, { logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await eventually(
      'cards, heartbeats and live command topics recreated',
      async () => {
        const have = new Set(await admin.listTopics());
        return [topics.cards(), topics.heartbeats(), topics.commands('rc-echo'), topics.commands('rc-public')].every((t) => have.has(t));
      },
      60000,
      250,
    );
    assert.ok(!(await admin.listTopics()).includes(topics.commands('rc-retired')), 'a retired agent gets no command topic back');
  } finally {
    await admin.disconnect();
  }

  t.diagnostic(`topics back ${Date.now() - t0} ms after the wipe began`);
  const fresh = await startDispatcher();
  for (const [name, url] of [
    ['fresh', fresh],
    ['running', running],
  ]) {
    for (const a of AGENTS)
      await eventually(`${a.id} served after the wipe by the ${name} dispatcher`, () => serves(url, a.id, a.key), 90000, 500);
    assert.ok(await refusesRetired(url), 'the retirement was republished too');
    t.diagnostic(`${name} dispatcher serves every agent ${Date.now() - t0} ms after the wipe began`);
  }
});
