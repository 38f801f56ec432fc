import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Envelopes, newId, TopicNames, type AgentHeartbeat, type JsonObject } from '@mesh/contract';
import { testKafka } from '../support/bus.js';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanKind, startTelemetry, withSpan } from '@mesh/telemetry';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { sampleAgents } from '@mesh/app-agents';
import { after } from 'node:test';
import { eventually, freshDatabase, sql, uniquePrefix } from '../support/infra.js';
import { refundCount, startTestBillingTools } from './agents-fixtures.js';
import { addDuplicateInvoice, commandProducer, EventCollector, runTask, sendCommand } from './runtime-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';

const OPS_TOKEN = 'runtime-spec-ops-token';
const spanExporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ serviceName: 'agents-test', exporter: spanExporter });
after(() => telemetry.shutdown());
const db = await freshDatabase('runtime');
const billing = await startTestBillingTools(db);
const prefix = uniquePrefix('runtime');
const topics = new TopicNames(prefix);
const agents = await startTestAgents(prefix, db, {
  AGENTS_RUN: 'echo-agent,refund-agent',
  AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl, requestTimeoutMs: 800 } }),
  AGENTS_RECONCILE_INTERVAL_MS: '200',
  AGENTS_EXECUTION_LEASE_MS: '3000',
  AGENTS_CONSUMER_SESSION_TIMEOUT_MS: '6000',
  AGENTS_OPS_TOKEN: OPS_TOKEN,
});
const events = new EventCollector();
await events.start(topics);
const producer = await commandProducer();

const dataOf = (artifact: JsonObject): JsonObject => ((artifact.parts as JsonObject[]).find((p) => p.data)?.data ?? {}) as JsonObject;
const textOfMessage = (m: JsonObject | undefined): string =>
  ((m?.parts as JsonObject[] | undefined) ?? []).map((p) => p.text ?? '').join('');

test('echo-agent answers with an artifact and completes, with increasing seq', async () => {
  const cmd = runTask('echo-agent', 'acme', 'hello mesh');
  await sendCommand(producer, topics, cmd);
  const final = await events.final(cmd.identity.taskId);
  assert.equal(final.body.state, 'TASK_STATE_COMPLETED');
  const all = events.events(cmd.identity.taskId);
  assert.deepEqual(
    all.map((e) => e.kind),
    ['task.status', 'task.artifact', 'task.status'],
  );
  assert.deepEqual(
    all.map((e) => e.body.seq),
    [0, 1, 2],
  );
  assert.equal(((events.artifacts(cmd.identity.taskId)[0].parts as JsonObject[])[0] as JsonObject).text, 'hello mesh');
  assert.equal(final.identity.executionId, cmd.identity.executionId);
});

test('refund conversation: input required without an invoice, then exactly one refund with a structured artifact', async () => {
  const first = runTask('refund-agent', 'acme', 'Hi, I was charged twice last month.');
  const taskId = first.identity.taskId;
  await sendCommand(producer, topics, first);
  const asked = await events.final(taskId);
  assert.equal(asked.body.state, 'TASK_STATE_INPUT_REQUIRED');
  assert.match(textOfMessage(asked.body.message), /Which invoice/);

  await sendCommand(producer, topics, runTask('refund-agent', 'acme', 'It is INV-2291.', { taskId, turn: 1 }));
  const done = await events.final(taskId, 2);
  assert.equal(done.body.state, 'TASK_STATE_COMPLETED', textOfMessage(done.body.message));
  const refund = dataOf(events.artifacts(taskId).at(-1)!);
  assert.equal(refund.invoice_id, 'INV-2291');
  assert.equal(refund.state, 'refunded');
  assert.equal(typeof refund.refund_id, 'string');
  assert.equal(await refundCount(db, 'acme', 'INV-2291'), 1);
});

test('the same command delivered three times makes one refund and re-emits the recorded final events', async () => {
  await addDuplicateInvoice(db, 'acme', 'INV-9101');
  const cmd = runTask('refund-agent', 'acme', 'Please refund INV-9101');
  const calls = billing.hooks.calls('issue_refund');
  for (let i = 0; i < 3; i++) await sendCommand(producer, topics, cmd);
  await events.final(cmd.identity.taskId, 3);
  const finals = events.finals(cmd.identity.taskId);
  assert.ok(finals.every((f) => f.body.state === 'TASK_STATE_COMPLETED'));
  assert.equal(new Set(finals.map((f) => f.body.seq)).size, 1, 'a re-emitted final event has the recorded seq');
  assert.equal(await refundCount(db, 'acme', 'INV-9101'), 1);
  assert.equal(billing.hooks.calls('issue_refund') - calls, 1);
  const rows = await sql<{ n: number }>(db, `SELECT count(*)::int AS n FROM agents.executions WHERE execution_id = $1`, [
    cmd.identity.executionId,
  ]);
  assert.equal(rows[0].n, 1);
});

test('a refund hanging past its timeout shows an unknown outcome, is reconciled to the single refund, never called twice', async () => {
  await addDuplicateInvoice(db, 'acme', 'INV-9102');
  billing.hooks.delay('issue_refund', { phase: 'after-commit', ms: 5000 });
  const calls = billing.hooks.calls('issue_refund');
  const cmd = runTask('refund-agent', 'acme', 'Refund INV-9102 please');
  await sendCommand(producer, topics, cmd);
  const done = await events.final(cmd.identity.taskId);
  assert.equal(done.body.state, 'TASK_STATE_COMPLETED', textOfMessage(done.body.message));
  const unknown = events
    .events(cmd.identity.taskId)
    .find((e) => e.kind === 'task.status' && (e.body.message?.metadata as JsonObject | undefined)?.['mesh/tool_outcome'] === 'unknown');
  assert.ok(unknown, 'the task showed the unknown outcome while it was reconciled');
  assert.equal(unknown.kind === 'task.status' && unknown.body.state, 'TASK_STATE_WORKING');
  assert.equal(dataOf(events.artifacts(cmd.identity.taskId).at(-1)!).state, 'refunded');
  assert.equal(billing.hooks.calls('issue_refund') - calls, 1, 'no second call');
  assert.equal(await refundCount(db, 'acme', 'INV-9102'), 1);
  const effects = await sql<{ state: string }>(
    db,
    `SELECT state FROM agents.tool_effects WHERE task_id = $1 AND tool = 'mcp__billing__issue_refund'`,
    [cmd.identity.taskId],
  );
  assert.deepEqual(
    effects.map((e) => e.state),
    ['ok'],
  );
});

test('cancel during a slow tool call aborts the call and cancels the task', async () => {
  await addDuplicateInvoice(db, 'acme', 'INV-9103');
  billing.hooks.delay('issue_refund', { phase: 'before', ms: 15000 });
  const calls = billing.hooks.calls('issue_refund');
  const aborted = billing.hooks.aborted('issue_refund');
  const cmd = runTask('refund-agent', 'acme', 'Refund INV-9103');
  await sendCommand(producer, topics, cmd);
  await eventually('the refund call reached the tool', () => billing.hooks.calls('issue_refund') > calls);
  await sendCommand(producer, topics, Envelopes.cancel(cmd.identity, { reason: 'customer changed their mind' }));
  const done = await events.final(cmd.identity.taskId, 1, 10000);
  assert.equal(done.body.state, 'TASK_STATE_CANCELED');
  await eventually('the tool saw the cancellation', () => billing.hooks.aborted('issue_refund') === aborted + 1);
  assert.equal(await refundCount(db, 'acme', 'INV-9103'), 0);
  billing.hooks.clear();
});

test('a cancel read before its run is recorded in the ledger: the run read later makes no refund and reports CANCELED', async () => {
  // Commands reordered across dispatcher replicas, or the cancel read by a worker that died since:
  // the cancel must hold without anything in memory.
  await addDuplicateInvoice(db, 'acme', 'INV-9110');
  const calls = billing.hooks.calls('issue_refund');
  const reads = billing.hooks.calls('get_invoice');
  const cmd = runTask('refund-agent', 'acme', 'Refund INV-9110');
  await sendCommand(producer, topics, Envelopes.cancel(cmd.identity, { reason: 'caller gave up' }));
  const recorded = await eventually('the cancel is recorded', async () => {
    const rows = await sql<{ reason: string }>(db, `SELECT reason FROM agents.cancellations WHERE execution_id = $1`, [
      cmd.identity.executionId,
    ]);
    return rows[0];
  });
  assert.equal(recorded.reason, 'caller gave up');
  await sendCommand(producer, topics, cmd);
  const done = await events.final(cmd.identity.taskId);
  assert.equal(done.body.state, 'TASK_STATE_CANCELED');
  assert.deepEqual(
    events.events(cmd.identity.taskId).map((e) => e.kind),
    ['task.status'],
    'no WORKING status, no artifact',
  );
  assert.equal(billing.hooks.calls('get_invoice'), reads, 'the handler never ran');
  assert.equal(billing.hooks.calls('issue_refund'), calls);
  assert.equal(await refundCount(db, 'acme', 'INV-9110'), 0);
});

test('an event on a command topic is ignored, not dead-lettered, and the command behind it runs', async () => {
  const deadLettered = async (): Promise<number> => {
    const res = await fetch(`${agents.url}/ops/workers`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } });
    const body = (await res.json()) as { agents: Array<{ agentId: string; deadLettered: number }> };
    return body.agents.find((a) => a.agentId === 'echo-agent')!.deadLettered;
  };
  const before = await deadLettered();
  const cmd = runTask('echo-agent', 'acme', 'after a stray event');
  // Same task, same ordering key: the run waits until the stray event was handled.
  await sendCommand(producer, topics, Envelopes.status(cmd.identity, { seq: 0, state: 'TASK_STATE_WORKING', final: false }));
  await sendCommand(producer, topics, cmd);
  assert.equal((await events.final(cmd.identity.taskId)).body.state, 'TASK_STATE_COMPLETED');
  assert.equal(await deadLettered(), before);
});

test('a command whose deadline has passed is not started', async () => {
  const reads = billing.hooks.calls('get_invoice');
  const cmd = runTask('refund-agent', 'acme', 'Refund INV-2292', { deadlineUnixMs: Date.now() - 1000 });
  await sendCommand(producer, topics, cmd);
  const done = await events.final(cmd.identity.taskId);
  assert.equal(done.body.state, 'TASK_STATE_FAILED');
  assert.match(textOfMessage(done.body.message), /deadline/);
  assert.deepEqual(
    events.events(cmd.identity.taskId).map((e) => e.kind),
    ['task.status'],
    'no WORKING status, no artifact',
  );
  assert.equal(billing.hooks.calls('get_invoice'), reads);
});

test('a deadline further away than a timer can wait runs the task normally (no overflow, not FAILED at once)', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => void warnings.push(w.name);
  process.on('warning', onWarning);
  try {
    // 9999999999 ms from now (the A2A-Deadline-Ms of the report), past Date's range, and just past 2^31-1 ms.
    const far = [Date.now() + 9_999_999_999, Number.MAX_SAFE_INTEGER, Date.now() + 2 ** 31 + 1000];
    for (const [i, deadlineUnixMs] of far.entries()) {
      await addDuplicateInvoice(db, 'acme', `INV-96${i}0`);
      const cmd = runTask('refund-agent', 'acme', `Refund INV-96${i}0`, { deadlineUnixMs });
      await sendCommand(producer, topics, cmd);
      const done = await events.final(cmd.identity.taskId);
      assert.equal(done.body.state, 'TASK_STATE_COMPLETED', `deadline ${deadlineUnixMs}: ${textOfMessage(done.body.message)}`);
    }
  } finally {
    process.off('warning', onWarning);
  }
  assert.ok(!warnings.includes('TimeoutOverflowWarning'), `no timer overflow (${warnings.join(', ')})`);
});

test('echo-agent reaches the reference MCP server over stdio', async () => {
  const cmd = runTask('echo-agent', 'globex', '/everything ping');
  await sendCommand(producer, topics, cmd);
  const done = await events.final(cmd.identity.taskId);
  assert.equal(done.body.state, 'TASK_STATE_COMPLETED', textOfMessage(done.body.message));
  assert.equal(((events.artifacts(cmd.identity.taskId)[0].parts as JsonObject[])[0] as JsonObject).text, 'Echo: ping');
});

test('an unknown agent in AGENTS_RUN stops the start with a clear error', async () => {
  await assert.rejects(
    startAgents({ ...loadAgentsConfig({ DATABASE_URL: db, TOPIC_PREFIX: prefix }), AGENTS_RUN: ['no-such-agent'] }, sampleAgents),
    /unknown agent "no-such-agent"/,
  );
});

test('metrics count dedup hits, unknown tool outcomes, tool latency and finished turns', async () => {
  // The reconciler settles the canceled refund's unknown outcome in the background: wait until no
  // tool has an open one (the gauge is by tool; a tool appears once the sampler saw an unknown).
  const open = /^mesh_unknown_outcomes_open\{[^}]*\} [1-9]/m;
  const text = await eventually('no unresolved unknown outcomes', async () => {
    const t = await (await fetch(`${agents.url}/metrics`)).text();
    return open.test(t) ? undefined : t;
  });
  assert.match(text, /mesh_dedup_hits_total\{kind="execution_id",agent="refund-agent"\} 2/);
  assert.match(text, /mesh_tool_calls_total\{agent="refund-agent",tool="mcp__billing__issue_refund",outcome="unknown"\} [1-9]/);
  assert.match(text, /mesh_tool_call_duration_seconds_count\{server="billing",tool="issue_refund",result="unknown"\} [1-9]/);
  assert.match(text, /mesh_agent_turns_total\{agent="refund-agent",state="completed"\} [1-9]/);
});

test('each agent of the process sends heartbeats to the directory topic', async () => {
  const consumer = testKafka('heartbeats').consumer({ groupId: `hb-${newId()}`, maxWaitTimeInMs: 50 });
  await consumer.connect();
  after(() => consumer.disconnect());
  await consumer.subscribe({ topic: topics.heartbeats(), fromBeginning: true });
  const seen = new Map<string, AgentHeartbeat>();
  await consumer.run({
    eachMessage: async ({ message }) => {
      const hb = JSON.parse(message.value!.toString('utf8')) as AgentHeartbeat;
      seen.set(message.key!.toString('utf8'), hb);
    },
  });
  await eventually('heartbeats of both agents', () => seen.has('echo-agent') && seen.has('refund-agent'));
  const hb = seen.get('refund-agent')!;
  assert.equal(hb.agentId, 'refund-agent');
  assert.equal(hb.workerId, agents.workerId);
  assert.ok(hb.ttlMs > 0 && hb.atUnixMs <= Date.now());
});

test("a turn continues the caller's trace: invoke_agent and execute_tool spans carry the task ids", async () => {
  await addDuplicateInvoice(db, 'globex', 'INV-9301');
  const cmd = runTask('refund-agent', 'globex', 'Refund INV-9301');
  // The caller (the dispatcher in production) sends inside its request span; the kafkajs
  // instrumentation puts that span's context in the record's traceparent header.
  const traceId = await withSpan('POST /a2a/refund-agent', { kind: SpanKind.SERVER }, async (span) => {
    await sendCommand(producer, topics, cmd);
    return span.spanContext().traceId;
  });
  await events.final(cmd.identity.taskId);
  const spans = await eventually('spans exported', () => {
    const all = spanExporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    return all.some((s) => s.name === 'invoke_agent refund-agent') ? all : undefined;
  });
  const turn = spans.find((s) => s.name === 'invoke_agent refund-agent')!;
  assert.equal(turn.attributes['mesh.task_id'], cmd.identity.taskId);
  assert.equal(turn.attributes['mesh.execution_id'], cmd.identity.executionId);
  assert.equal(turn.attributes['mesh.outcome'], 'completed');
  const refund = spans.find((s) => s.name === 'execute_tool mcp__billing__issue_refund');
  assert.ok(refund, `tool span in the same trace: ${spans.map((s) => s.name).join(', ')}`);
  assert.equal(refund.parentSpanContext?.spanId, turn.spanContext().spanId, 'the tool call is a child of the turn');
  assert.equal(refund.attributes['gen_ai.tool.name'], 'mcp__billing__issue_refund');
  assert.equal(refund.attributes['mesh.outcome'], 'ok');
  assert.match(String(refund.attributes['mesh.idempotency_key']), /^globex:/);
});
