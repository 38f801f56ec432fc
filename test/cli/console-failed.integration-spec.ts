// Failed tasks in the console: the task list filtered by tenant and state `failed` (the agents'
// ledgers, any tenant, with the ops token) shows each failed task with the reason its turn gave.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { defineAgent } from '@mesh/agent-sdk';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { startConsole } from '@mesh/app-cli';
import { TopicNames } from '@mesh/contract';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';
import { ledgerDatabase } from '../agents/agents-fixtures.js';
import { standInForTopicOwners } from '../support/topic-owners.js';
import { commandProducer, runTask, sendCommand } from '../agents/runtime-fixtures.js';
import { KEYS, startTestDirectory } from '../directory/directory-fixtures.js';

const OPS_TOKEN = 'console-failed-ops-token';
// Fails every turn whose text asks it to, with that text as the reason; completes the others.
const judgeAgent = defineAgent({
  id: 'judge-agent',
  card: {
    name: 'Judge Agent',
    description: 'Fails the turns that ask it to.',
    version: '1.0.0',
    skills: [{ id: 'judge', name: 'Judge', description: 'Judges', tags: ['test'] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
  },
  channel: { visibility: 'public', maxInFlight: 4, partitions: 1 },
  mcpServers: {},
  handler: async (task, ctx) => {
    const text = task.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    return text.startsWith('fail:') ? ctx.fail(text.slice(5)) : ctx.complete('fine');
  },
});

const db = await ledgerDatabase('console-failed');
const prefix = uniquePrefix('console-failed');
await standInForTopicOwners(prefix);
const agents = await startAgents(
  {
    ...loadAgentsConfig({
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: prefix,
      DATABASE_URL: db.url,
      AGENTS_RUN: 'judge-agent',
      AGENTS_OPS_TOKEN: OPS_TOKEN,
    }),
    AGENTS_PORT: 0,
  },
  { 'judge-agent': judgeAgent },
);
after(() => agents.stop());
const { dir } = await startTestDirectory('console-failed-dir');
const consoleApp = await startConsole(
  {
    directoryUrl: dir.url,
    dispatcherUrl: 'http://127.0.0.1:9',
    agentsUrl: agents.url,
    token: KEYS.acme,
    opsToken: OPS_TOKEN,
    brokers: testRun().brokers,
    prefix,
  },
  { port: 0, sampleIntervalMs: 1000 },
);
after(() => consoleApp.stop());

interface Overview {
  tasks: Array<{ id: string; agent: string; state: string; message: string; tenant?: string }>;
  problems: string[];
}
const overview = async (query: string): Promise<Overview> => {
  const res = await fetch(`${consoleApp.url}api/overview?${query}`);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as Overview;
};

test("a tenant's failed tasks are listed with their reason; other tenants' and other states' are not", async () => {
  const producer = await commandProducer();
  const topics = new TopicNames(prefix);
  const acmeFailed = runTask('judge-agent', 'acme', 'fail:the invoice system refused the token');
  const acmeDone = runTask('judge-agent', 'acme', 'all good');
  const globexFailed = runTask('judge-agent', 'globex', 'fail:globex reason');
  for (const cmd of [acmeFailed, acmeDone, globexFailed]) await sendCommand(producer, topics, cmd);

  const failed = await eventually(
    "acme's failed task is listed",
    async () => {
      const o = await overview('tenant=acme&state=failed');
      return o.tasks.some((t) => t.id === acmeFailed.identity.taskId) ? o : undefined;
    },
    20000,
    200,
  );
  assert.deepEqual(
    failed.tasks.map((t) => ({ id: t.id, agent: t.agent, state: t.state, message: t.message, tenant: t.tenant })),
    [
      {
        id: acmeFailed.identity.taskId,
        agent: 'judge-agent',
        state: 'failed',
        message: 'the invoice system refused the token',
        tenant: 'acme',
      },
    ],
    'only acme, only failed, with the reason',
  );
  const globex = await eventually('globex has its own', async () => {
    const o = await overview('tenant=globex&state=failed');
    return o.tasks.length > 0 ? o : undefined;
  });
  assert.deepEqual(
    globex.tasks.map((t) => [t.id, t.message]),
    [[globexFailed.identity.taskId, 'globex reason']],
  );
  const completed = await eventually('the completed one is listed as such', async () => {
    const o = await overview('tenant=acme&state=completed');
    return o.tasks.length > 0 ? o : undefined;
  });
  assert.deepEqual(
    completed.tasks.map((t) => t.id),
    [acmeDone.identity.taskId],
  );
});
