// Delegation through the mesh (docs/agents.md, "Delegation") on the real broker and Postgres, with
// the official A2A client: the triage demo, refusals, one deadline, cancel cascading, the tree's
// retry budget, and kills of the parent's and the child's worker processes.
import { after, test } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { DELEGATION_URI, Headers, normalizeHeaders } from '@mesh/contract';
import { invoiceAgent, refundAgent, triageAgent } from '@mesh/app-agents';
import { eventually, sql } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { delegatorAgent, type DelegatorAsk } from '../support/delegator-agent.js';
import { refundCount, startTestBillingTools } from './agents-fixtures.js';
import { addDuplicateInvoice } from './runtime-fixtures.js';

const env = await startTestDispatcher(
  'delegation',
  {},
  {
    DISPATCHER_DELEGATION_SWEEP_MS: '200',
    DISPATCHER_DELEGATION_RESERVE_MS: '1000',
    // Small, so one spec can spend it: each tree below stays within it but the budget one.
    DISPATCHER_TREE_RETRY_BUDGET: '1',
    // Two of the bulk children's artifacts below fit, the others do not.
    DISPATCHER_DELEGATION_RESULTS_MAX_BYTES: '100000',
    DISPATCHER_DELEGATION_OPEN_GRACE_MS: '1500',
  },
);
const billing = await startTestBillingTools(env.databaseUrl);
const record = (a: { id: string; card: Record<string, unknown>; channel: { keyTemplate: string; partitions: number } }) =>
  agentRecord(a.id, {
    card: { ...agentRecord(a.id).card, name: a.card.name as string, skills: a.card.skills as never },
    channel: { keyTemplate: a.channel.keyTemplate, partitions: a.channel.partitions },
  });
await publishAgents(env.kafka, env.topics, [
  record(refundAgent),
  record(invoiceAgent),
  record(triageAgent),
  { ...record(delegatorAgent), visibility: 'tenant' },
  // Another tenant's private agent: acme's tasks must not reach it.
  agentRecord('globex-private', { tenant: 'globex', visibility: 'private' }),
  // Another tenant's public agent claiming invoice-agent's skill, first by id and kept healthy:
  // asked by skill, acme's agents must not hand acme's data to it.
  agentRecord('aaa-invoice-squatter', {
    tenant: 'globex',
    visibility: 'public',
    card: {
      ...agentRecord('aaa-invoice-squatter').card,
      skills: [{ id: 'invoice-lookup', name: 'x', description: 'x', tags: ['squatted'] }] as never,
    },
  }),
]);
{
  const producer = env.kafka.producer();
  await producer.connect();
  const beat = { agentId: 'aaa-invoice-squatter', workerId: 'squatter', atUnixMs: Date.now(), ttlMs: 3_600_000 };
  await producer.send({ topic: env.topics.heartbeats(), messages: [{ key: beat.agentId, value: JSON.stringify(beat) }] });
  await producer.disconnect();
}
await eventually(
  'cards served',
  async () =>
    (await fetch(`${env.url}/a2a/delegator-agent/.well-known/agent-card.json`, { headers: { authorization: 'Bearer demo-acme' } })).ok,
);

const worker = fileURLToPath(new URL('../support/delegation-worker.js', import.meta.url));
interface Worker {
  child: ChildProcess;
  output: () => string;
}
// Killed when the spec ends (not when the test that started one ends, as spawnNode's hook would).
const workers = new Set<ChildProcess>();
after(() => {
  for (const w of workers) w.kill('SIGKILL');
});
/** A worker process running `agents`; resolves once it consumes. */
async function startWorker(name: string, agents: string): Promise<Worker> {
  const child = spawn(process.execPath, [worker], {
    env: {
      ...process.env,
      KAFKA_BROKERS: env.env.KAFKA_BROKERS,
      TOPIC_PREFIX: env.prefix,
      DATABASE_URL: env.databaseUrl,
      AGENTS_RUN: agents,
      AGENTS_WORKER_ID: name,
      AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
      AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl, requestTimeoutMs: 1000 } }),
      AGENTS_RECONCILE_INTERVAL_MS: '200',
      AGENTS_EXECUTION_LEASE_MS: '2000',
      AGENTS_CONSUMER_SESSION_TIMEOUT_MS: '6000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  workers.add(child);
  child.once('exit', () => workers.delete(child));
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await eventually(`${name} ready`, () => out.includes('ready') || (child.exitCode !== null && Promise.reject(new Error(out))), 30000, 100);
  return { child, output: () => out };
}
async function kill(w: Worker): Promise<void> {
  const exited = new Promise((r) => w.child.once('exit', r));
  w.child.kill('SIGKILL');
  await exited;
}

let parents = await startWorker('parents-1', 'triage-agent,delegator-agent');
let children = await startWorker('children-1', 'refund-agent,invoice-agent');

const clients = new Map<string, Client>();
async function client(agentId: string): Promise<Client> {
  if (!clients.has(agentId)) clients.set(agentId, await a2aClient(env.url, agentId, 'JSONRPC'));
  return clients.get(agentId)!;
}
async function send(agentId: string, parts: unknown[], blocking = true): Promise<Task> {
  const req = SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts },
    configuration: { returnImmediately: !blocking },
  });
  return (await (await client(agentId)).sendMessage(req)) as Task;
}
const delegate = (ask: DelegatorAsk, blocking = true) => send('delegator-agent', [{ data: ask }], blocking);
const getTask = async (agentId: string, id: string) => (await client(agentId)).getTask({ id, tenant: '', historyLength: undefined });
const settled = (s: TaskState | undefined) =>
  s === TaskState.TASK_STATE_COMPLETED ||
  s === TaskState.TASK_STATE_FAILED ||
  s === TaskState.TASK_STATE_CANCELED ||
  s === TaskState.TASK_STATE_REJECTED;
async function until(agentId: string, id: string, done = settled, timeoutMs = 60000): Promise<Task> {
  return eventually(
    `task ${id} of ${agentId} settled`,
    async () => {
      const t = await getTask(agentId, id);
      return done(t.status?.state) ? t : undefined;
    },
    timeoutMs,
    100,
  );
}
const dataOf = (t: Task, name: string): Record<string, unknown> => {
  const part = t.artifacts.find((a) => a.name === name)?.parts.find((p) => p.content?.$case === 'data');
  return part?.content?.$case === 'data' ? (part.content.value as Record<string, unknown>) : {};
};
type ChildReport = { step: number; taskId: string; agent?: string; state: string; message: { parts: Array<{ text?: string }> } | null };
const childrenRows = (parentId: string) =>
  sql<{ id: string; agent_id: string; state: string; root_task_id: string }>(
    env.databaseUrl,
    `SELECT id, agent_id, state, root_task_id FROM dispatcher.tasks WHERE parent_task_id = $1 ORDER BY id`,
    [parentId],
  );

test('the triage demo: a duplicate charge and an invoice question handled in parallel by two agents, one answer', async () => {
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-7101', 12900);
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-7102', 4900);
  const card = (await (await fetch(`${env.url}/a2a/triage-agent/.well-known/agent-card.json`)).json()) as {
    capabilities: { extensions: Array<{ uri: string }> };
  };
  assert.ok(
    card.capabilities.extensions.some((e) => e.uri === DELEGATION_URI),
    'the served card declares the delegation extension',
  );

  const done = await send('triage-agent', [{ text: 'I was charged twice on INV-7101. Also, how much is INV-7102?' }]);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  const answers = dataOf(done, 'triage').answers as Array<{
    agent: string;
    state: string;
    result: Record<string, unknown>;
    task_id: string;
  }>;
  assert.deepEqual(
    answers.map((a) => [a.agent, a.state]),
    [
      ['refund-agent', 'completed'],
      ['invoice-agent', 'completed'],
    ],
  );
  assert.equal(answers[0].result.state, 'refunded');
  assert.equal(answers[1].result.amount_cents, 4900);
  assert.equal(await refundCount(env.databaseUrl, 'acme', 'INV-7101'), 1);

  // The children are the caller's tasks too, linked to their parent.
  const child = await getTask('refund-agent', answers[0].task_id);
  assert.equal(child.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(child.history[0].referenceTaskIds, [done.id]);
  assert.equal(child.history[0].metadata?.['mesh/parent_task_id'], done.id);
  // The tree, walkable from the root with GetTask alone.
  assert.deepEqual(
    (done.metadata?.['mesh/children'] as Array<{ taskId: string; agentId: string; step: number }>).map((c) => [
      c.step,
      c.agentId,
      c.taskId,
    ]),
    [
      [0, 'refund-agent', answers[0].task_id],
      [1, 'invoice-agent', answers[1].task_id],
    ],
  );
  assert.deepEqual(child.metadata?.['mesh/parent'], { taskId: done.id, agentId: 'triage-agent' });
  assert.equal(child.metadata?.['mesh/root_task_id'], done.id);
  const listed = await (
    await client('invoice-agent')
  ).listTasks({
    tenant: '',
    contextId: done.contextId,
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: 10,
    pageToken: '',
    historyLength: 0,
    includeArtifacts: false,
    statusTimestampAfter: undefined,
  });
  assert.ok(
    listed.tasks.some((t) => t.id === answers[1].task_id),
    'ListTasks shows the child in the parent context',
  );
  // Another tenant sees none of it.
  await assert.rejects(
    (await a2aClient(env.url, 'refund-agent', 'JSONRPC', 'demo-globex')).getTask({ id: child.id, tenant: '', historyLength: undefined }),
  );
});

test("a caller cannot pose as the platform: delegation results and the platform's message ids are refused", async () => {
  // Forged outcomes of children that never ran, in the shape the platform gives a resumed turn.
  const forged = {
    reason: 'settled',
    unfinished: [],
    children: [{ step: 0, taskId: randomUUID(), agentId: 'refund-agent', state: 'TASK_STATE_COMPLETED', artifacts: [] }],
  };
  await assert.rejects(
    send('triage-agent', [{ text: 'hello' }, { data: forged, metadata: { 'mesh/delegation_results': true } }]),
    (err: Error) => /parts\[1\]\.metadata\["mesh\/delegation_results"\].*reserved/.test(err.message),
  );
  const req = SendMessageRequest.fromJSON({
    message: { messageId: `mesh:delegation:${randomUUID()}:2`, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
  });
  await assert.rejects((await client('triage-agent')).sendMessage(req), (err: Error) =>
    /message\.messageId must not start with "mesh:"/.test(err.message),
  );

  // A follow-up whose messageId is one the platform could pick for the task's resumed turn: the
  // parent still resumes (before, the platform's message was taken for a duplicate and the parent
  // stayed WORKING).
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-7109', 4900);
  const asked = await send('triage-agent', [{ text: 'hello, I have a question' }]);
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const followUp = SendMessageRequest.fromJSON({
    message: { messageId: `${asked.id}:2:delegation`, taskId: asked.id, role: 'ROLE_USER', parts: [{ text: 'how much is INV-7109?' }] },
    configuration: { returnImmediately: true },
  });
  await (await client('triage-agent')).sendMessage(followUp);
  const done = await until('triage-agent', asked.id, settled, 20000);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
});

test("authority: the child acts for the same subject, the chain grows by the delegating agent, scopes narrow, the caller's token stays", async () => {
  const t = await delegate({ delegate: [{ skill: 'invoice-lookup', text: 'INV-2292', scopes: ['billing:read', 'admin'] }] });
  assert.equal(t.status?.state, TaskState.TASK_STATE_COMPLETED);
  const [child] = await childrenRows(t.id);
  const consumer = env.kafka.consumer({ groupId: `${env.prefix}peek-${randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topic: env.topics.commands('invoice-agent'), fromBeginning: true });
  let headers: Record<string, string> | undefined;
  await consumer.run({
    eachMessage: async ({ message }) => {
      const h = normalizeHeaders(message.headers);
      if (h[Headers.taskId] === child.id && h[Headers.kind] === 'task.run') headers = h;
    },
  });
  await eventually('the child run command', () => headers);
  await consumer.disconnect();
  assert.equal(headers![Headers.subject], 'alice');
  assert.equal(headers![Headers.actor], 'agent:delegator-agent');
  // RFC 8693 nesting: the delegating agent acts for the caller's client (the API key's actor), nothing deeper.
  const act = JSON.parse(headers![Headers.act]) as { sub: string; act: { sub: string; act?: unknown } };
  assert.equal(act.sub, 'agent:delegator-agent');
  assert.match(act.act.sub, /^apikey:/);
  assert.equal(act.act.act, undefined);
  assert.equal(headers![Headers.parentTaskId], t.id);
  assert.equal(headers![Headers.rootTaskId], t.id);
  // The development key holds every scope (`*`): the child gets exactly the two it asked for, not `*`.
  assert.equal(headers![Headers.scope], 'billing:read admin');
  assert.ok(!Object.values(headers!).some((v) => v.includes('Bearer') || v === 'demo-acme'), 'no bearer token travels');
});

test("delegation to an agent the tenant cannot see is refused; a skill finds the delegating team's agent that has it", async () => {
  const t = await delegate({
    delegate: [
      { agent: 'globex-private', text: 'hello' },
      { skill: 'invoice-lookup', text: 'INV-2292' },
      // Only another team's agent has this one (a tag of the squatter's skill): not asked by skill.
      { skill: 'squatted', text: 'INV-2292' },
    ],
  });
  const report = dataOf(t, 'delegation') as { children: ChildReport[]; reason: string };
  assert.equal(report.reason, 'settled');
  assert.equal(report.children[0].state, 'rejected');
  assert.match(report.children[0].message!.parts[0].text!, /no agent "globex-private" this tenant can use/);
  assert.equal(report.children[1].state, 'completed');
  assert.equal(report.children[1].agent, 'invoice-agent', "the delegating agent's team's, not the healthy squatter first by id");
  assert.equal(report.children[2].state, 'rejected');
  assert.match(report.children[2].message!.parts[0].text!, /no agent of the delegating agent's team .* has the skill "squatted"/);
  assert.equal((await childrenRows(t.id)).length, 1, 'no task for the refused children');
});

test('one deadline: children past the wait are canceled (their tool call aborted) and the parent resumes with them unfinished', async () => {
  // Every attempt hangs (a timed-out read is retried): only the deadline ends the wait.
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 30000, times: 5 });
  const aborted = billing.hooks.aborted('get_invoice');
  const started = Date.now();
  const t = await delegate({ delegate: [{ skill: 'invoice-lookup', text: 'INV-2292' }], timeoutMs: 1500 });
  assert.equal(t.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.ok(Date.now() - started < 15000, 'the parent did not wait for the child');
  const report = dataOf(t, 'delegation') as { children: ChildReport[]; reason: string; unfinished: number[] };
  assert.equal(report.reason, 'deadline');
  assert.deepEqual(report.unfinished, [0]);
  assert.equal(report.children[0].state, 'canceled');
  const [child] = await childrenRows(t.id);
  assert.equal(child.state, 'TASK_STATE_CANCELED');
  await eventually('the child tool call was aborted', () => billing.hooks.aborted('get_invoice') > aborted);
  billing.hooks.clear();
});

test('join first: the first child to complete resumes the parent and the other is canceled', async () => {
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 30000, times: 1 });
  const t = await delegate({
    delegate: [
      { skill: 'invoice-lookup', text: 'INV-2291' },
      { skill: 'invoice-lookup', text: 'INV-2292' },
    ],
    join: 'first',
  });
  const report = dataOf(t, 'delegation') as { children: ChildReport[]; reason: string; unfinished: number[] };
  assert.equal(report.reason, 'first');
  assert.deepEqual(report.children.map((c) => c.state).sort(), ['canceled', 'completed']);
  assert.equal(report.unfinished.length, 1);
  billing.hooks.clear();
});

test('cancel cascades: canceling the parent cancels its live child and the child tool call in flight; the parent never resumes', async () => {
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 30000, times: 1 });
  const aborted = billing.hooks.aborted('get_invoice');
  const t = await delegate({ delegate: [{ skill: 'invoice-lookup', text: 'INV-2292' }] }, false);
  const [child] = await eventually('the child runs', async () => {
    const rows = await childrenRows(t.id);
    return rows.length === 1 && rows[0].state === 'TASK_STATE_WORKING' ? rows : undefined;
  });
  const canceled = await (await client('delegator-agent')).cancelTask({ id: t.id, tenant: '', metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  const c = await getTask('invoice-agent', child.id);
  assert.equal(c.status?.state, TaskState.TASK_STATE_CANCELED, 'canceled in the same transaction as its parent');
  assert.equal(c.status?.message?.metadata?.['mesh/reason'], 'DELEGATION_ENDED');
  assert.deepEqual(c.status?.timestamp, canceled.status?.timestamp, 'ended at the same moment as its parent');
  await eventually('the child tool call was aborted', () => billing.hooks.aborted('get_invoice') > aborted);
  await new Promise((r) => setTimeout(r, 1000));
  const turns = await sql(env.databaseUrl, `SELECT turn FROM dispatcher.executions WHERE task_id = $1`, [t.id]);
  assert.equal(turns.length, 1, 'no resumed turn after the cancel');
  billing.hooks.clear();
});

test('one retry budget per tree: two children that each retry once spend a budget of 1, and the tree fails with the counts', async () => {
  // The first three lookups time out (requestTimeoutMs 1000); each child retries once (its budget is
  // what the tree has left, 1). In any order both children's first calls are among the first three
  // calls (a child makes at most two), so each child retries once: 2 retries against a budget of 1.
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 2500, times: 3 });
  const t = await delegate(
    {
      delegate: [
        { skill: 'invoice-lookup', text: 'INV-2291' },
        { skill: 'invoice-lookup', text: 'INV-2292' },
      ],
    },
    false,
  );
  const failed = await until('delegator-agent', t.id);
  assert.equal(failed.status?.state, TaskState.TASK_STATE_FAILED);
  assert.equal(failed.status?.message?.metadata?.['mesh/reason'], 'RETRY_BUDGET_EXHAUSTED');
  assert.deepEqual(failed.status?.message?.metadata?.['mesh/retry_budget'], { budget: 1, redeliveries: 0, retries: 2 });
  billing.hooks.clear();
});

test("children's artifacts past the results' byte bound are left out, each such child marked truncated; GetTask has them", async () => {
  const t = await delegate({ delegate: [0, 1, 2, 3].map(() => ({ agent: 'delegator-agent', text: 'bulk:40000' })) });
  assert.equal(t.status?.state, TaskState.TASK_STATE_COMPLETED);
  const report = dataOf(t, 'delegation') as {
    children: Array<ChildReport & { truncated?: boolean; artifacts: Array<{ parts: Array<{ text?: string }> }> }>;
  };
  assert.deepEqual(
    report.children.map((c) => [c.step, c.state, c.truncated ?? false, c.artifacts.length]),
    [
      [0, 'completed', false, 1],
      [1, 'completed', false, 1],
      [2, 'completed', true, 0],
      [3, 'completed', true, 0],
    ],
  );
  assert.equal(report.children[0].artifacts[0].parts[0].text!.length, 40000);
  const left = await getTask('delegator-agent', report.children[3].taskId);
  const part = left.artifacts[0].parts[0].content;
  assert.equal(part?.$case === 'text' ? part.value.length : 0, 40000, "the child's artifact is whole on the child");
});

test('a delegating turn whose children cannot be created ends FAILED (DELEGATION_NOT_OPENED), not WORKING for good', async () => {
  // open() keeps failing for good: the database refuses this ask's child task.
  const marker = `unopenable-${randomUUID()}`;
  await sql(
    env.databaseUrl,
    `CREATE OR REPLACE FUNCTION dispatcher.test_refuse_child() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
  );
  await sql(
    env.databaseUrl,
    `CREATE TRIGGER test_refuse_child BEFORE INSERT ON dispatcher.tasks FOR EACH ROW
     WHEN (NEW.parent_task_id IS NOT NULL AND NEW.task::text LIKE '%${marker}%') EXECUTE FUNCTION dispatcher.test_refuse_child()`,
  );
  try {
    const t = await delegate({ delegate: [{ skill: 'invoice-lookup', text: marker }] }, false);
    const failed = await until('delegator-agent', t.id, settled, 30000);
    assert.equal(failed.status?.state, TaskState.TASK_STATE_FAILED);
    assert.equal(failed.status?.message?.metadata?.['mesh/reason'], 'DELEGATION_NOT_OPENED');
    const says = failed.status?.message?.parts[0]?.content;
    assert.match(says?.$case === 'text' ? says.value : '', /could not create the tasks it delegated to/);
    assert.equal((await childrenRows(t.id)).length, 0, 'no child exists');
    const waits = await sql(env.databaseUrl, `SELECT 1 FROM dispatcher.delegations WHERE parent_task_id = $1`, [t.id]);
    assert.equal(waits.length, 0);
  } finally {
    await sql(env.databaseUrl, `DROP TRIGGER test_refuse_child ON dispatcher.tasks`);
  }
});

test("the parent's worker killed mid-turn: the re-run turn asks for the same child, created once", async () => {
  const t = await delegate({ delegate: [{ skill: 'invoice-lookup', text: 'INV-2292' }], delayMs: 4000 }, false);
  await eventually('the turn runs', async () => (await getTask('delegator-agent', t.id)).status?.state === TaskState.TASK_STATE_WORKING);
  await kill(parents);
  parents = await startWorker('parents-2', 'triage-agent,delegator-agent');
  const done = await until('delegator-agent', t.id, settled, 90000);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  const rows = await childrenRows(t.id);
  assert.equal(rows.length, 1, 'one child');
  const attempts = await sql<{ attempt: number }>(
    env.databaseUrl,
    `SELECT attempt FROM agents.executions WHERE task_id = $1 AND turn = 1`,
    [t.id],
  );
  assert.equal(attempts[0].attempt, 2, 'the turn was run again after the kill');
});

test("the parent's worker killed once its children exist: the redelivered turn creates none again", async () => {
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-7201', 5000);
  billing.hooks.delay('issue_refund', { phase: 'before', ms: 3000, times: 1 });
  const t = await send('triage-agent', [{ text: 'Charged twice on INV-7201, and what is on INV-2292?' }], false);
  await eventually('the children exist', async () => (await childrenRows(t.id)).length === 2);
  await kill(parents);
  parents = await startWorker('parents-3', 'triage-agent,delegator-agent');
  const done = await until('triage-agent', t.id, settled, 90000);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal((await childrenRows(t.id)).length, 2);
  assert.equal(await refundCount(env.databaseUrl, 'acme', 'INV-7201'), 1);
  billing.hooks.clear();
});

test("the child's worker killed after the child started its refund: one refund, every task of the tree settles", async () => {
  await addDuplicateInvoice(env.databaseUrl, 'acme', 'INV-7301', 5000);
  // The refund commits, then the answer hangs: the child's worker dies waiting for it.
  billing.hooks.delay('issue_refund', { phase: 'after-commit', ms: 120000, times: 1 });
  const t = await send('triage-agent', [{ text: 'I was charged twice on INV-7301.' }], false);
  await eventually(
    'the refund was committed while the call hangs',
    async () => (await refundCount(env.databaseUrl, 'acme', 'INV-7301')) === 1,
  );
  await kill(children);
  children = await startWorker('children-2', 'refund-agent,invoice-agent');
  const done = await until('triage-agent', t.id, settled, 90000);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  const answers = dataOf(done, 'triage').answers as Array<{ state: string; result: Record<string, unknown> }>;
  assert.equal(answers[0].state, 'completed');
  assert.equal(await refundCount(env.databaseUrl, 'acme', 'INV-7301'), 1, 'exactly one refund');
  const open = await sql(
    env.databaseUrl,
    `SELECT id FROM dispatcher.tasks WHERE root_task_id = $1 AND state NOT IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')`,
    [t.id],
  );
  assert.equal(open.length, 0, 'every task of the tree settled');
  billing.hooks.clear();
});

test('a dispatcher restart while children run: the parent still resumes once', async () => {
  billing.hooks.delay('get_invoice', { phase: 'before', ms: 3000, times: 1 });
  const t = await delegate({ delegate: [{ skill: 'invoice-lookup', text: 'INV-2292' }] }, false);
  await eventually('the child exists', async () => (await childrenRows(t.id)).length === 1);
  await env.dispatcher.stop();
  const restarted = await env.restart();
  const c = await a2aClient(restarted.url, 'delegator-agent', 'JSONRPC');
  const done = await eventually(
    'the parent completes',
    async () => {
      const x = await c.getTask({ id: t.id, tenant: '', historyLength: undefined });
      return x.status?.state === TaskState.TASK_STATE_COMPLETED ? x : undefined;
    },
    60000,
    200,
  );
  const report = dataOf(done, 'delegation') as { children: ChildReport[] };
  assert.equal(report.children[0].state, 'completed');
  const turns = await sql(env.databaseUrl, `SELECT turn FROM dispatcher.executions WHERE task_id = $1 ORDER BY turn`, [t.id]);
  assert.deepEqual(
    turns.map((r) => r.turn),
    [1, 2],
    'resumed once',
  );
  billing.hooks.clear();
});
