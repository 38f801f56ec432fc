// The operator console in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core)
// against a real directory, dispatcher, agents runtime (echo-agent and refund-agent with
// billing-tools) and broker: the overview with filters and stuck-work warnings, a task's detail
// (history, side effects, attempts, trace id), actions behind the ops token, the dead-letter
// browser, the workers view, and a console process that logs no kafkajs errors while dead-letter
// topics are missing. With MESH_UPDATE_SCREENSHOTS=1 it writes docs/console-*.png.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { type Task } from '@a2a-js/sdk';
import { startConsole, textMessage } from '@mesh/app-cli';
import { echoAgent, invoiceAgent, refundAgent, triageAgent } from '@mesh/app-agents';
import { BusAdmin, BusProducer, createKafka } from '@mesh/bus';
import { eventually, sql, testRun } from '../support/infra.js';
import { a2aClient, a2aClientWith, agentRecord, authFetch, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';
import { startTestBillingTools } from '../agents/agents-fixtures.js';
import { runTask } from '../agents/runtime-fixtures.js';
import { repoRoot, spawnNode } from '../support/processes.js';

const env = await startTestDispatcher('console');
const OPS_TOKEN = 'console-ops-token-for-tests';
const billing = await startTestBillingTools(env.databaseUrl);
const agents = await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'echo-agent,refund-agent',
  AGENTS_WORKER_ID: 'console-worker-1',
  AGENTS_OPS_TOKEN: OPS_TOKEN,
  AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl } }),
});
// idle-agent is routed by the dispatcher but no worker runs it: its commands wait with no consumer.
await publishAgents(env.kafka, env.topics, [
  agentRecord('echo-agent', { card: { ...agentRecord('echo-agent').card, name: echoAgent.card.name } }),
  agentRecord('refund-agent', {
    card: { ...agentRecord('refund-agent').card, name: refundAgent.card.name, skills: refundAgent.card.skills },
    channel: { keyTemplate: refundAgent.channel.keyTemplate, partitions: refundAgent.channel.partitions },
  }),
  agentRecord('idle-agent'),
]);
// A task tree for the detail page: triage-agent delegates to refund-agent and invoice-agent. Routed by
// the dispatcher only (the directory's pages keep their three agents).
await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'invoice-agent,triage-agent',
  AGENTS_WORKER_ID: 'console-worker-2',
  AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl } }),
});
await publishAgents(
  env.kafka,
  env.topics,
  [invoiceAgent, triageAgent].map((a) =>
    agentRecord(a.id, {
      card: { ...agentRecord(a.id).card, name: a.card.name, skills: a.card.skills as never },
      channel: { keyTemplate: a.channel.keyTemplate, partitions: a.channel.partitions },
    }),
  ),
);
for (const id of ['echo-agent', 'refund-agent', 'idle-agent', 'triage-agent'])
  await eventually(`${id} card served`, async () => (await fetch(`${env.url}/a2a/${id}/.well-known/agent-card.json`)).ok);
const { dir } = await startTestDirectory('console-dir');
for (const [id, name] of [
  ['echo-agent', 'Echo Agent'],
  ['refund-agent', 'Refund Agent'],
  ['idle-agent', 'Idle Agent'],
]) {
  const registered = await fetch(`${dir.url}/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.acme}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, visibility: 'public', card: card(name!) }),
  });
  assert.equal(registered.status, 201, await registered.text());
}

const targets = {
  directoryUrl: dir.url,
  dispatcherUrl: env.url,
  agentsUrl: agents.url,
  token: KEYS.acme,
  brokers: testRun().brokers,
  prefix: env.prefix,
};
const consoleApp = await startConsole(
  { ...targets, opsToken: OPS_TOKEN, startTimeoutMs: 1000 },
  { port: 0, sampleIntervalMs: 500, windowMs: 120_000 },
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

const pageErrors: string[] = [];
async function openPage(hash = '#/'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(consoleApp.url + hash);
  return page;
}

/** The README's screenshots are refreshed only on request, so a test run leaves the tree unchanged. */
async function screenshot(page: Page, name: string): Promise<void> {
  const shot =
    process.env.MESH_UPDATE_SCREENSHOTS === '1'
      ? new URL(`../../../docs/console-${name}.png`, import.meta.url)
      : new URL(`./console-${name}.png`, import.meta.url);
  await page.screenshot({ path: fileURLToPath(shot), fullPage: true });
}

const textOf = async (page: Page, selector: string) => (await page.textContent(selector)) ?? '';

async function send(agent: string, text: string, wait: boolean, traceId?: string): Promise<Task> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (traceId) headers.set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
    return authFetch(KEYS.acme)(input, { ...init, headers });
  };
  const client = traceId ? await a2aClientWith(fetchImpl, env.url, agent, 'JSONRPC') : await a2aClient(env.url, agent, 'JSONRPC');
  return (await client.sendMessage(textMessage(text, {}, wait))) as Task;
}

const dlqOf = (agent: string) => `${env.topics.commands(agent)}.dlq`;
const kafka = createKafka({ brokers: testRun().brokers, clientId: 'console-test' });
const admin = new BusAdmin(kafka);
after(() => admin.close());

// First, while no dead-letter topic exists: the case that used to flood the log.
test('a console process logs no kafkajs errors while the dead-letter topics do not exist', async () => {
  // The runtime creates the dead-letter topics of the agents it runs; idle-agent runs nowhere.
  assert.equal(await admin.topicExists(dlqOf('idle-agent')), false);
  const proc = spawnNode(
    `${repoRoot}apps/cli/dist/main.js`,
    {
      MESH_DIRECTORY_URL: dir.url,
      MESH_DISPATCHER_URL: env.url,
      MESH_AGENTS_URL: agents.url,
      MESH_TOKEN: KEYS.acme,
      MESH_OPS_TOKEN: OPS_TOKEN,
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: env.prefix,
    },
    ['console', '--port', '0', '--sample-interval', '200'],
  );
  const url = await eventually('the console process listens', async () => /operator console on (\S+)/.exec(proc.stderr())?.[1], 20000);
  // Every page's API, several rounds, as a page left open would call them.
  for (let i = 0; i < 5; i++)
    for (const path of ['api/overview', 'api/dead-letters', 'api/workers'])
      assert.equal((await fetch(url + path)).status, 200, `${path} answers`);
  const dlqs = (await (await fetch(`${url}api/dead-letters`)).json()) as { topics: Array<{ agent: string; exists: boolean }> };
  assert.equal(dlqs.topics.length, 3);
  assert.equal(dlqs.topics.find((t) => t.agent === 'idle-agent')?.exists, false);
  proc.child.kill('SIGTERM');
  await proc.exited;
  const lines = proc.stderr().split('\n').filter(Boolean);
  const kafkajs = lines.filter((l) => /kafkajs/i.test(l));
  assert.deepEqual(kafkajs, [], 'no kafkajs lines');
  assert.deepEqual(
    lines.filter((l) => /"level":"error"/.test(l)),
    [],
    'no error lines',
  );
});

const traceId = randomBytes(16).toString('hex');
let refundTask: Task;
let echoTask: Task;

test('the overview lists agents and tasks, and the filters narrow the list', async () => {
  refundTask = await send('refund-agent', 'Please refund INV-2291', true, traceId);
  echoTask = await send('echo-agent', 'hello console', true);
  const page = await openPage();
  await page.waitForSelector('#agents tr[data-agent="echo-agent"]');
  assert.match(await textOf(page, '#status'), /updated/);
  await page.waitForSelector(`#tasks tr[data-task="${refundTask.id}"]`, { timeout: 20000 });
  await page.waitForSelector(`#tasks tr[data-task="${echoTask.id}"]`, { timeout: 20000 });
  const echoRow = await textOf(page, '#agents tr[data-agent="echo-agent"]');
  assert.match(echoRow, /healthy|no heartbeat/);
  assert.match(echoRow, /\d/, 'lag and workers are numbers once the broker answered');
  await page.waitForSelector('.chart[data-chart="echo-agent"] polyline', { state: 'attached', timeout: 20000 });
  // Teams and refusals: this dispatcher has no ops token, so its bindings are named unavailable; its
  // /metrics (no token) still gives the refusal counts.
  await page.waitForSelector('#teamsBox #refusedEvents');
  assert.match(await textOf(page, '#teamsUnavailable'), /unavailable: dispatcher answered 503 to GET \/ops\/teams/);
  assert.ok(await page.isVisible('#teamsBox #refusedExchanges'));

  await page.selectOption('#fAgent', 'echo-agent');
  await page.click('#fApply');
  await page.waitForSelector(`#tasks tr[data-task="${refundTask.id}"]`, { state: 'detached' });
  assert.ok(await page.isVisible(`#tasks tr[data-task="${echoTask.id}"]`));

  await page.selectOption('#fAgent', '');
  await page.selectOption('#fState', 'failed');
  await page.click('#fApply');
  await page.waitForSelector(`#tasks tr[data-task="${echoTask.id}"]`, { state: 'detached' });
  assert.equal(await page.isVisible(`#tasks tr[data-task="${refundTask.id}"]`), false);

  // The tenant filter reads the ledgers across tenants (ops token): acme's tasks, and nobody's.
  await page.selectOption('#fState', '');
  await page.fill('#fTenant', 'acme');
  await page.click('#fApply');
  await eventually(
    'the ledger view lists the task with its tenant',
    async () => /acme/.test(await textOf(page, `#tasks tr[data-task="${refundTask.id}"]`).catch(() => '')),
    20000,
    200,
  );
  await page.fill('#fTenant', 'no-such-tenant');
  await page.click('#fApply');
  await page.waitForSelector(`#tasks tr[data-task="${refundTask.id}"]`, { state: 'detached' });
  assert.match(await textOf(page, '#tasks'), /no tasks match/);
  await page.close();

  const bad = await fetch(`${consoleApp.url}api/overview?state=bogus`);
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: string }).error, /valid states: .*input-required/);
  // With a tenant the ledgers are read: a state only the dispatcher knows is refused up front, not
  // passed on to /ops/tasks (which would refuse it as a problem on an empty page).
  const notInLedgers = await fetch(`${consoleApp.url}api/overview?tenant=acme&state=working`);
  assert.equal(notInLedgers.status, 400);
  assert.match(((await notInLedgers.json()) as { error: string }).error, /valid states with a tenant: running, completed/);
});

test('the task detail shows history, artifacts, side effects, execution attempts and the trace id', async () => {
  const page = await openPage(`#/task/refund-agent/${refundTask.id}`);
  await page.waitForSelector('#executions tbody tr[data-execution]', { timeout: 20000 });
  assert.match(await textOf(page, '#history'), /Please refund INV-2291/);
  assert.match(await textOf(page, '#artifacts'), /INV-2291/);
  assert.match(await textOf(page, '#taskState'), /completed/);
  const effects = await textOf(page, '#effects');
  assert.match(effects, /mcp__billing__issue_refund\s*yes\s*ok\s*1/);
  const attempts = await textOf(page, '#executions tbody');
  assert.match(attempts, /^\d+\s*1\s*finished\s*completed/, 'one turn, attempt 1, finished as completed');
  assert.equal((await textOf(page, '#traceId')).trim(), traceId);
  await screenshot(page, 'task');
  await page.close();
  assert.equal((await fetch(`${consoleApp.url}api/tasks/refund-agent/no-such-task`)).status, 404);
  // The ledgers find a task by id alone: another agent's task is not shown under this one.
  assert.equal((await fetch(`${consoleApp.url}api/tasks/echo-agent/${refundTask.id}`)).status, 404);
  // The agents runtime's ledger view behind it: the ops token, and named errors for bad filters.
  const opsGet = (path: string, token?: string) =>
    fetch(`${agents.url}/ops${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  assert.equal((await opsGet(`/tasks/${refundTask.id}`)).status, 401);
  assert.equal((await opsGet(`/tasks/no-such-task`, OPS_TOKEN)).status, 404);
  const badState = await opsGet('/tasks?state=bogus', OPS_TOKEN);
  assert.equal(badState.status, 400);
  assert.match(((await badState.json()) as { error: string }).error, /state must be one of running, completed/);
  assert.equal((await opsGet('/tasks?limit=0', OPS_TOKEN)).status, 400);
  const listed = (await (await opsGet('/tasks?tenant=acme&agent=refund-agent&state=completed', OPS_TOKEN)).json()) as {
    tasks: Array<{ taskId: string; tenant: string }>;
  };
  assert.deepEqual(
    listed.tasks.map((t) => [t.taskId, t.tenant]),
    [[refundTask.id, 'acme']],
  );
});

test('the task detail shows a task tree: the children a task delegated, each linked, and the parent of a child', async () => {
  const triage = await send('triage-agent', 'I was charged twice on INV-2291. Also, what is on INV-2292?', true);
  const page = await openPage(`#/task/triage-agent/${triage.id}`);
  await page.waitForSelector('#children tbody tr[data-child]', { timeout: 20000 });
  const rows = await page.$$eval('#children tbody tr[data-child]', (trs) => trs.map((tr) => tr.textContent ?? ''));
  assert.equal(rows.length, 2);
  assert.match(rows[0], /^0.*refund-agent\s*completed/);
  assert.match(rows[1], /^1.*invoice-agent\s*completed/);
  await page.click('#children tbody tr:nth-child(2) a');
  await page.waitForSelector('#treeParent a', { timeout: 20000 });
  assert.match(await textOf(page, '#treeParent'), new RegExp(`Delegated by ${triage.id} \\(triage-agent\\)`));
  await page.close();
});

test('actions need the ops token: a cancel without it is refused, with it the task is canceled', async () => {
  // idle-agent has no worker: its task stays submitted until canceled.
  const task = await send('idle-agent', 'never read', false);
  const page = await openPage(`#/task/idle-agent/${task.id}`);
  await page.waitForSelector('#taskState');
  assert.match(await textOf(page, '#taskState'), /submitted/);
  await page.fill('#opsToken', 'wrong-token');
  await page.dispatchEvent('#opsToken', 'change');
  await page.click('#cancel');
  await page.waitForSelector('#flash[data-result="error"]');
  assert.match(await textOf(page, '#flash'), /refused \(401\)/);
  // Chromium reports the refused request on the page's console: that one is expected.
  const refusal = pageErrors.findIndex((e) => /status of 401/.test(e));
  if (refusal >= 0) pageErrors.splice(refusal, 1);
  assert.match(await textOf(page, '#taskState'), /submitted/);

  await page.fill('#opsToken', OPS_TOKEN);
  await page.dispatchEvent('#opsToken', 'change');
  await page.click('#cancel');
  await page.waitForSelector('#flash[data-result="ok"]');
  assert.match(await textOf(page, '#flash'), /canceled/);
  await eventually('the page shows the task canceled', async () => /canceled/.test(await textOf(page, '#taskState')), 10000, 200);
  await page.close();

  // The API itself: no token, a wrong content type, and a console that has no ops token at all.
  const post = (url: string, headers: Record<string, string>) => fetch(url, { method: 'POST', headers, body: '{}' });
  const cancelUrl = `${consoleApp.url}api/tasks/idle-agent/${task.id}/cancel`;
  assert.equal((await post(cancelUrl, { 'content-type': 'application/json' })).status, 401);
  assert.equal((await post(cancelUrl, { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'text/plain' })).status, 415);
  const bare = await startConsole(targets, { port: 0, sampleIntervalMs: 60_000 });
  try {
    const refused = await post(`${bare.url}api/dead-letters/echo-agent/replay`, {
      authorization: `Bearer ${OPS_TOKEN}`,
      'content-type': 'application/json',
    });
    assert.equal(refused.status, 403);
    assert.match(((await refused.json()) as { error: string }).error, /ops token/);
    const filtered = await fetch(`${bare.url}api/overview?tenant=acme`);
    assert.equal(filtered.status, 400, 'the tenant filter needs the ops token');
    const overview = (await (await fetch(`${bare.url}api/overview`)).json()) as { ops: boolean; problems: string[] };
    assert.equal(overview.ops, false);
    assert.match(overview.problems.join('\n'), /no ops token/);
  } finally {
    await bare.stop();
  }
  // The agents runtime down: the overview still answers and names it; the broker's view stays.
  const cut = await startConsole(
    { ...targets, agentsUrl: 'http://127.0.0.1:9', opsToken: OPS_TOKEN },
    { port: 0, sampleIntervalMs: 60_000 },
  );
  try {
    const o = (await (await fetch(`${cut.url}api/overview`)).json()) as {
      problems: string[];
      agents: Array<{ id: string; lag: number | null }>;
    };
    assert.match(o.problems.join('\n'), /cannot reach the agents runtime at http:\/\/127\.0\.0\.1:9/);
    assert.equal(typeof o.agents.find((a) => a.id === 'echo-agent')?.lag, 'number');
    assert.equal((await fetch(`${cut.url}api/tasks/echo-agent/no-such-task`)).status, 404);
  } finally {
    await cut.stop();
  }
  assert.equal((await fetch(`${consoleApp.url}api/nothing`)).status, 404);
  assert.equal((await fetch(`${consoleApp.url}api/overview`, { method: 'PUT' })).status, 405);
  const badResolve = await fetch(`${consoleApp.url}api/unknowns/some-key/resolve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ state: 'maybe' }),
  });
  assert.equal(badResolve.status, 400);
  const missingKey = await fetch(`${consoleApp.url}api/unknowns/no-such-key/resolve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ state: 'absent' }),
  });
  assert.equal(missingKey.status, 404);
});

test('an unknown outcome is resolved from the overview with the ops token', async () => {
  // A call whose answer never came, as the effect ledger records it, on a server no gateway knows:
  // the reconciler cannot settle it, only an operator can.
  const key = `acme:${refundTask.id}:mcp__nowhere__send_letter:console-test`;
  await sql(
    env.databaseUrl,
    `INSERT INTO agents.tool_effects (idempotency_key, tenant, task_id, execution_id, tool, args_hash, args, side_effect, state, reason, owner, lease_until)
     VALUES ($1, 'acme', $2, $3, 'mcp__nowhere__send_letter', 'console-test', '{}', true, 'unknown', 'timed out after the call was sent', 'gone', now())`,
    [key, refundTask.id, `acme:${refundTask.id}:9`],
  );
  const page = await openPage();
  await page.fill('#opsToken', OPS_TOKEN);
  await page.dispatchEvent('#opsToken', 'change');
  const row = `#unknowns tr[data-key="${key}"]`;
  await page.waitForSelector(row, { timeout: 20000 });
  assert.match(await textOf(page, row), /timed out after the call was sent/);
  await page.click(`${row} button[data-resolve="absent"]`);
  await page.waitForSelector('#flash[data-result="ok"]');
  assert.match(await textOf(page, '#flash'), /resolved .* as absent/);
  await page.waitForSelector(row, { state: 'detached' });
  const [settled] = await sql<{ state: string }>(env.databaseUrl, 'SELECT state FROM agents.tool_effects WHERE idempotency_key = $1', [
    key,
  ]);
  assert.equal(settled?.state, 'absent');
  await page.close();
});

test('stuck work is flagged: lag with no consumer, and a task past its start-by time', async () => {
  await send('idle-agent', 'waits forever', false);
  const page = await openPage();
  await page.waitForSelector('#warnings [data-warning="lag-without-consumer"][data-agent="idle-agent"]', { timeout: 20000 });
  await page.waitForSelector('#warnings [data-warning="past-start-by"][data-agent="idle-agent"]', { timeout: 20000 });
  assert.equal(await page.isVisible('#warnings [data-agent="echo-agent"]'), false, 'a consumed agent is not flagged');
  await screenshot(page, 'overview');
  await page.close();
});

test('the workers view names each worker process by id and host with its agents, and shows the group members and their partitions', async () => {
  const page = await openPage('#/workers');
  await page.waitForSelector('#worker-processes tr[data-worker="console-worker-1"]', { timeout: 20000 });
  const row = await textOf(page, '#worker-processes tr[data-worker="console-worker-1"]');
  assert.ok(row.includes(hostname()), `the host is shown: ${row}`);
  assert.ok(row.includes(process.env.KAFKA_USERNAME ?? 'not reported'), `the Kafka principal is shown: ${row}`);
  assert.match(row, /echo-agent, refund-agent/);
  // The other process runs only agents outside the directory's list: not this view's.
  assert.equal(await page.isVisible('#worker-processes tr[data-worker="console-worker-2"]'), false);
  await page.waitForSelector('[data-workers="echo-agent"] #members-echo-agent tbody tr td code');
  assert.match(await textOf(page, '[data-workers="echo-agent"] h3'), /Stable/);
  assert.match(await textOf(page, '#members-echo-agent'), /\d/);
  assert.match(await textOf(page, '#partitions-echo-agent'), /read by|[0-9a-f-]{8}/);
  assert.match(await textOf(page, '[data-workers="idle-agent"]'), /lag with no consumer/);
  await screenshot(page, 'workers');
  await page.close();
});

test('the dead-letter browser lists a dead letter, and a replay marks it replayed', async () => {
  const dlq = dlqOf('echo-agent');
  await admin.ensureTopic(dlq, { partitions: 1 });
  const producer = new BusProducer(kafka);
  await producer.connect();
  after(() => producer.disconnect());
  const cmd = runTask('echo-agent', 'acme', 'dead');
  await producer.sendRecord(dlq, 'acme:echo-agent', JSON.stringify({}), {
    dlq_error: 'handler exploded',
    dlq_error_code: 'BOOM',
    dlq_attempts: '3',
    dlq_source_topic: env.topics.commands('echo-agent'),
    dlq_source_partition: '0',
    dlq_source_offset: '7',
    mesh_task: cmd.identity.taskId,
  });
  const page = await openPage('#/dead-letters');
  const row = '#dlq-echo-agent tr[data-offset="0@0"]';
  await page.waitForSelector(row, { timeout: 30000 });
  const before = await textOf(page, row);
  assert.match(before, /BOOM\s*handler exploded\s*3/);
  assert.match(before, /waiting/);
  assert.match(await textOf(page, '[data-dlq="idle-agent"]'), /no dead letter yet/);
  await page.fill('#opsToken', OPS_TOKEN);
  await page.dispatchEvent('#opsToken', 'change');
  await page.click('button[data-replay="echo-agent"]');
  await page.waitForSelector('#flash[data-result="ok"]', { timeout: 40000 });
  assert.match(await textOf(page, '#flash'), /replayed 1 record/);
  await eventually('the row is marked replayed', async () => /replayed/.test(await textOf(page, row)), 30000, 300);
  await screenshot(page, 'dead-letters');
  await page.close();
});

test('the pages logged no errors, and the page runs under a strict CSP', async () => {
  const res = await fetch(consoleApp.url);
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'sha256-[^']+'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|https?:/);
  assert.doesNotMatch(await res.text(), /<script src|<link rel="stylesheet"|https?:\/\/(?!www\.w3\.org)/);
  assert.deepEqual(pageErrors, []);
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
