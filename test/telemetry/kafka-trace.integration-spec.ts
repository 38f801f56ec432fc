// The kafkajs instrumentation must really produce spans in this ESM codebase (kafkajs is imported
// as ESM here and by Nest): a producer span and the consumer's process span share one trace id.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { Kafka } from 'kafkajs';
import { startTelemetry, withSpan, SpanKind, SpanAttr, traceHeaders } from '@mesh/telemetry';
import { BusConsumer, createKafka } from '@mesh/bus';
import { eventually, testRun, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testTopic } from '../support/bus.js';

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ serviceName: 'trace-test', exporter });
after(() => telemetry.shutdown());

test('producer and consumer spans appear and share the request trace id', async () => {
  assert.equal(typeof Kafka, 'function');
  const topic = `${uniquePrefix('trace')}trace`;
  const kafka = createKafka({ brokers: testRun().brokers, clientId: 'trace-test' });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();

  let requestTraceId = '';
  await withSpan('POST /a2a/echo-agent', { kind: SpanKind.SERVER, attributes: { [SpanAttr.tenant]: 'acme' } }, async (span) => {
    requestTraceId = span.spanContext().traceId;
    assert.match(traceHeaders().traceparent, new RegExp(`^00-${requestTraceId}-`));
    await producer.send({ topic, messages: [{ key: 'acme:echo-agent', value: 'hello' }] });
  });

  const consumer = kafka.consumer({ groupId: `${topic}.g` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let handlerTraceId = '';
  await consumer.run({
    eachMessage: async () => {
      await withSpan('invoke_agent echo-agent', {}, async (span) => {
        handlerTraceId = span.spanContext().traceId;
      });
    },
  });
  await eventually('the message to be processed', () => handlerTraceId !== '');
  await consumer.disconnect();
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();

  const spans = exporter.getFinishedSpans();
  const send = spans.find((s) => s.name === `send ${topic}`);
  const processSpan = spans.find((s) => s.name === `process ${topic}`);
  assert.ok(send, `a producer span, got: ${spans.map((s) => s.name).join(', ')}`);
  assert.ok(processSpan, `a consumer process span, got: ${spans.map((s) => s.name).join(', ')}`);
  assert.equal(send.spanContext().traceId, requestTraceId);
  assert.equal(processSpan.spanContext().traceId, requestTraceId);
  assert.equal(handlerTraceId, requestTraceId, 'work inside the handler joins the same trace');
});

test('a BusConsumer record is one process span in its producer trace, for as long as its handling lasts', async () => {
  const topic = `${uniquePrefix('trace')}bus`;
  const kafka = createKafka({ brokers: testRun().brokers, clientId: 'trace-test' });
  const { producer } = await testTopic(kafka, topic, 1);
  // The instrumentation's producer span, in the trace of the context the record is sent from.
  let producerTraceId = '';
  await withSpan('POST /a2a/echo', { kind: SpanKind.SERVER }, async (span) => {
    producerTraceId = span.spanContext().traceId;
    await producer.send(topic, 'acme:echo', runCommand('acme', 'task-traced', 1));
  });

  const consumer = new BusConsumer(kafka, { groupId: `${topic}.g`, topics: [topic], fromBeginning: true });
  cleanup(() => consumer.stop());
  let handlerTraceId = '';
  let handledAt = 0;
  await consumer.start(async () => {
    await new Promise((r) => setTimeout(r, 30));
    await withSpan('invoke_agent echo', {}, async (span) => {
      handlerTraceId = span.spanContext().traceId;
    });
    handledAt = Date.now();
  });
  await eventually('the record to be handled', () => handlerTraceId !== '');
  await consumer.stop();

  const spans = exporter.getFinishedSpans().filter((s) => s.name.endsWith(topic));
  const consumerSpans = spans.filter((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(consumerSpans.length, 1, `one consumer span, got: ${consumerSpans.map((s) => s.name).join(', ')}`);
  const [processSpan] = consumerSpans;
  assert.equal(processSpan.name, `process ${topic}`);
  assert.equal(processSpan.spanContext().traceId, producerTraceId);
  assert.equal(handlerTraceId, producerTraceId, 'the handler runs inside it');
  const endMs = processSpan.endTime[0] * 1000 + processSpan.endTime[1] / 1e6;
  assert.ok(endMs >= handledAt - 1, 'the span ends after the handling, not when the batch was handed over');
});
