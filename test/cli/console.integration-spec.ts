// The operator console in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core):
// it loads, shows agents with health and lag, a task submitted during the test appears, and the
// page logs no errors. Saves docs/console.png.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { Role, type Task } from '@a2a-js/sdk';
import { startConsole } from '@mesh/app-cli';
import { echoAgent } from '@mesh/app-agents';
import { eventually, testRun } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';

const env = await startTestDispatcher('console');
const OPS_TOKEN = 'console-ops-token-for-tests';
const agents = await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'echo-agent',
  AGENTS_OPS_TOKEN: OPS_TOKEN,
});
await publishAgents(env.kafka, env.topics, [
  agentRecord('echo-agent', { card: { ...agentRecord('echo-agent').card, name: echoAgent.card.name } }),
]);
await eventually('echo-agent card served', async () => (await fetch(`${env.url}/a2a/echo-agent/.well-known/agent-card.json`)).ok);
const { dir } = await startTestDirectory('console-dir');
const registered = await fetch(`${dir.url}/v1/agents`, {
  method: 'POST',
  headers: { authorization: `Bearer ${KEYS.acme}`, 'content-type': 'application/json' },
  body: JSON.stringify({ id: 'echo-agent', visibility: 'public', card: card('Echo Agent') }),
});
assert.equal(registered.status, 201, await registered.text());

const consoleApp = await startConsole(
  {
    directoryUrl: dir.url,
    dispatcherUrl: env.url,
    agentsUrl: agents.url,
    token: KEYS.acme,
    opsToken: OPS_TOKEN,
    brokers: testRun().brokers,
    prefix: env.prefix,
  },
  { port: 0 },
);
after(() => consoleApp.stop());

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
after(() => browser.close());

test('the console loads, lists the agent, shows a task submitted meanwhile, and logs no errors', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 720 } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(consoleApp.url);
  await page.waitForSelector('#agents tr[data-agent="echo-agent"]');
  assert.match((await page.textContent('#status')) ?? '', /updated/);

  const client = await a2aClient(env.url, 'echo-agent', 'JSONRPC');
  const task = (await client.sendMessage({
    tenant: '',
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: 'hello console' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      contextId: '',
      taskId: '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { acceptedOutputModes: [], returnImmediately: false, taskPushNotificationConfig: undefined },
    metadata: undefined,
  })) as Task;

  // The page refreshes itself: no reload. A refresh during the send may list the task before it
  // completed, so the row is awaited in its final state.
  const taskRow = `#tasks tr[data-task="${task.id}"]`;
  await page.waitForSelector(taskRow, { timeout: 20000 });
  await eventually(
    `the console shows ${task.id} completed`,
    async () => /echo-agent\s*completed/.test((await page.textContent(taskRow)) ?? ''),
    20000,
    200,
  );
  const agentRow = (await page.textContent('#agents tr[data-agent="echo-agent"]')) ?? '';
  assert.match(agentRow, /healthy|no heartbeat/);
  assert.match(agentRow, /\d/, 'lag and in-flight are numbers once the runtime answered');
  assert.equal(await page.isVisible('#problems'), false, `problems: ${await page.textContent('#problems')}`);
  // The README's screenshot is refreshed only on request, so a test run leaves the tree unchanged.
  const shot =
    process.env.MESH_UPDATE_SCREENSHOTS === '1'
      ? new URL('../../../docs/console.png', import.meta.url)
      : new URL('./console.png', import.meta.url);
  await page.screenshot({ path: fileURLToPath(shot), fullPage: true });
  assert.deepEqual(errors, []);
});

test('the console answers only to a loopback Host (a DNS-rebound name gets nothing)', async () => {
  const { request } = await import('node:http');
  const url = new URL(consoleApp.url);
  const get = (host: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: '/api/overview', headers: { host } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  const rebound = await get(`attacker.example:${url.port}`);
  assert.equal(rebound.status, 403);
  assert.doesNotMatch(rebound.body, /echo-agent/);
  assert.equal((await get(`127.0.0.1:${url.port}`)).status, 200);
  assert.equal((await get(`localhost:${url.port}`)).status, 200);
});
