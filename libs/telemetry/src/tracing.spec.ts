import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTelemetry, traceHeaders, tracer } from './tracing.js';

test('without an exporter, spans get ids and travel as traceparent but record nothing', async () => {
  const telemetry = startTelemetry({ serviceName: 'tracing-spec', env: {} });
  try {
    await tracer().startActiveSpan('work', async (span) => {
      assert.equal(span.isRecording(), false);
      assert.match(span.spanContext().traceId, /^[0-9a-f]{32}$/);
      assert.match(traceHeaders().traceparent, new RegExp(`^00-${span.spanContext().traceId}-${span.spanContext().spanId}-00$`));
      span.end();
    });
  } finally {
    await telemetry.shutdown();
  }
});

test('with an exporter, spans are recorded and exported', async () => {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({ serviceName: 'tracing-spec', env: {}, exporter });
  try {
    tracer().startActiveSpan('work', (span) => {
      assert.equal(span.isRecording(), true);
      span.end();
    });
    assert.deepEqual(
      exporter.getFinishedSpans().map((s) => s.name),
      ['work'],
    );
  } finally {
    await telemetry.shutdown();
  }
});
