// One trace per A2A request, from the dispatcher's server span to the MCP client request: the
// refund conversation through the real dispatcher, broker, agents runtime and billing MCP server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanKind } from '@opentelemetry/api';
import { TaskState, type Task } from '@a2a-js/sdk';
import { startTelemetry, SpanAttr } from '@mesh/telemetry';
import { eventually } from '../support/infra.js';
import { a2aClient } from '../support/dispatcher-harness.js';
import { startRefundStack, textMessage } from '../support/refund-stack.js';
import { jsonMessage } from '../support/a2a-fixtures.js';

// Before any Kafka client exists, so the instrumentation sees every producer and consumer.
const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ serviceName: 'request-trace-test', exporter });
after(() => telemetry.shutdown());

const { env } = await startRefundStack('trace-e2e');
const message = textMessage;

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) => spans.filter((s) => parentOf(s) === parent.spanContext().spanId);
const onlyChild = (spans: ReadableSpan[], parent: ReadableSpan, pred: (s: ReadableSpan) => boolean, what: string): ReadableSpan => {
  const found = childrenOf(spans, parent).filter(pred);
  assert.equal(
    found.length,
    1,
    `${what} under "${parent.name}": ${childrenOf(spans, parent)
      .map((s) => s.name)
      .join(', ')}`,
  );
  return found[0]!;
};

test('the refund conversation: server span → produce → process → invoke_agent → execute_tool → MCP request, one trace per request', async () => {
  const client = await a2aClient(env.url, 'refund-agent', 'JSONRPC');
  const asked = (await client.sendMessage(message('Hi, I was charged twice.'))) as Task;
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const done = (await client.sendMessage(message('It is INV-2291.', { taskId: asked.id, contextId: asked.contextId }))) as Task;
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);

  const servers = () => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER && s.attributes[SpanAttr.taskId] === asked.id);
  await eventually('both server spans ended', async () => servers().length === 2);
  // The second request (the continuation that runs the tools) is a trace of its own.
  const [first, second] = servers().sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  assert.notEqual(first!.spanContext().traceId, second!.spanContext().traceId);

  for (const [server, tools] of [
    [first!, 0],
    [second!, 1],
  ] as const) {
    const traceId = server.spanContext().traceId;
    const inTrace = () => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    await eventually('the turn finished in this trace', async () =>
      inTrace().some((s) => s.name === 'invoke_agent refund-agent' && s.attributes[SpanAttr.outcome] !== undefined),
    );
    const spans = inTrace();
    assert.equal(server.attributes[SpanAttr.tenant], 'acme');
    assert.equal(server.attributes[SpanAttr.agentId], 'refund-agent');
    assert.equal(server.attributes[SpanAttr.contextId], asked.contextId);

    const produce = onlyChild(
      spans,
      server,
      (s) => s.kind === SpanKind.PRODUCER && s.name.endsWith('.commands'),
      'the outbox produce span',
    );
    assert.equal(produce.attributes['messaging.system'], 'kafka');
    const processSpan = onlyChild(spans, produce, (s) => s.kind === SpanKind.CONSUMER, 'the worker process span');
    assert.equal(processSpan.attributes['mesh.attempt'], 1);
    const invoke = onlyChild(spans, processSpan, (s) => s.name === 'invoke_agent refund-agent', 'invoke_agent');
    assert.equal(invoke.attributes[SpanAttr.genAiOperation], 'invoke_agent');
    assert.equal(invoke.attributes[SpanAttr.genAiAgentId], 'refund-agent');
    assert.equal(invoke.attributes[SpanAttr.tenant], 'acme');
    assert.equal(invoke.attributes[SpanAttr.taskId], asked.id);
    assert.equal(invoke.attributes[SpanAttr.contextId], asked.contextId);
    assert.equal(typeof invoke.attributes[SpanAttr.executionId], 'string');
    assert.equal(invoke.attributes[SpanAttr.outcome], tools === 0 ? 'input-required' : 'completed');

    const toolSpans = childrenOf(spans, invoke).filter((s) => s.name.startsWith('execute_tool '));
    if (tools === 0) {
      assert.equal(toolSpans.length, 0, 'the first turn only asks a question');
      continue;
    }
    assert.ok(
      toolSpans.length >= 1,
      `tool spans: ${childrenOf(spans, invoke)
        .map((s) => s.name)
        .join(', ')}`,
    );
    for (const t of toolSpans) {
      assert.equal(t.attributes[SpanAttr.genAiOperation], 'execute_tool');
      assert.equal(t.name, `execute_tool ${String(t.attributes[SpanAttr.genAiToolName])}`);
      assert.match(String(t.attributes[SpanAttr.genAiToolCallId]), /.+/);
      assert.equal(t.attributes[SpanAttr.idempotencyKey], t.attributes[SpanAttr.genAiToolCallId]);
      assert.equal(t.attributes[SpanAttr.outcome], 'ok');
      assert.equal(t.attributes['gen_ai.tool.call.arguments'], undefined, 'arguments are not recorded without the opt-in');
      const mcp = onlyChild(spans, t, (s) => s.kind === SpanKind.CLIENT, 'the MCP client request');
      assert.equal(mcp.attributes['mcp.method.name'], 'tools/call');
      assert.equal(mcp.attributes['mcp.server.name'], 'billing');
    }
    assert.ok(
      toolSpans.some((t) => String(t.attributes[SpanAttr.genAiToolName]).includes('refund')),
      'the refund call is in the trace',
    );
  }
});

test('every A2A response names its trace in X-Trace-Id, continuing a caller traceparent', async () => {
  const body = (id: string) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'SendMessage',
      params: { message: jsonMessage('hello'), configuration: { returnImmediately: true } },
    });
  const headers = { authorization: 'Bearer demo-acme', 'content-type': 'application/json', 'a2a-version': '1.0' };
  const fresh = await fetch(`${env.url}/a2a/refund-agent`, { method: 'POST', headers, body: body('1') });
  assert.equal(fresh.status, 200);
  const traceId = fresh.headers.get('x-trace-id');
  assert.match(traceId ?? '', /^[0-9a-f]{32}$/);
  await eventually('its server span ended', async () =>
    exporter.getFinishedSpans().some((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === traceId),
  );
  const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const continued = await fetch(`${env.url}/a2a/refund-agent`, {
    method: 'POST',
    headers: { ...headers, traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` },
    body: body('2'),
  });
  assert.equal(continued.headers.get('x-trace-id'), callerTrace);
  // Errors name their trace too (an unknown method, answered by the JSON-RPC handler).
  const unknown = await fetch(`${env.url}/a2a/refund-agent`, {
    method: 'POST',
    headers,
    body: '{"jsonrpc":"2.0","id":3,"method":"NoSuchMethod","params":{}}',
  });
  assert.match(unknown.headers.get('x-trace-id') ?? '', /^[0-9a-f]{32}$/);
});
