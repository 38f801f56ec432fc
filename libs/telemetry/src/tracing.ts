import { createRequire } from 'node:module';
import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { KafkaJsInstrumentation } from '@opentelemetry/instrumentation-kafkajs';
import { resourceFromAttributes } from '@opentelemetry/resources';

export interface TelemetryOptions {
  serviceName: string;
  /** Extra exporter, e.g. an InMemorySpanExporter in tests (spans exported synchronously). */
  exporter?: SpanExporter;
  env?: NodeJS.ProcessEnv;
}

export interface Telemetry {
  shutdown(): Promise<void>;
}

let active: { telemetry: Telemetry; provider: NodeTracerProvider } | undefined;

/** OTLP export is off unless the standard OTEL_* variables ask for it. */
function otlpWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER === 'otlp');
}

/**
 * Starts tracing for this process once: W3C trace context, the exporters asked for and, while
 * spans are exported, the kafkajs instrumentation. Safe to call before or after kafkajs was imported.
 */
export function startTelemetry(opts: TelemetryOptions): Telemetry {
  if (active) return active.telemetry;
  const env = opts.env ?? process.env;
  const processors: SpanProcessor[] = [];
  if (opts.exporter) processors.push(new SimpleSpanProcessor(opts.exporter));
  if (otlpWanted(env)) processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  const exporting = processors.length > 0;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? opts.serviceName }),
    spanProcessors: processors,
    // With no exporter nothing would read a recorded span: spans still get ids (logs carry them,
    // `traceparent` still travels with commands and events) but record nothing, which saves
    // building attributes and events per request and per message.
    ...(exporting ? {} : { sampler: new AlwaysOffSampler() }),
  });
  provider.register();
  // The kafkajs instrumentation only adds spans of its own around every produce and fetch; with
  // nothing to record them it would be pure cost per message (an envelope carries its trace
  // context in its own headers either way, and the bus's consumer spans continue it).
  const unregister = exporting ? instrumentKafkajs() : () => undefined;
  const telemetry: Telemetry = {
    async shutdown() {
      unregister();
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
      active = undefined;
    },
  };
  active = { telemetry, provider };
  return telemetry;
}

/** Registers the kafkajs instrumentation; returns its unregister. */
function instrumentKafkajs(): () => void {
  const unregister = registerInstrumentations({ instrumentations: [new KafkaJsInstrumentation()] });
  // Requiring kafkajs here makes the instrumentation patch the (shared) module, also when app code imported it as ESM.
  createRequire(import.meta.url)('kafkajs');
  return unregister;
}

/** The platform's tracer. */
export const tracer = () => trace.getTracer('agent-mesh');

/** W3C headers (`traceparent`, `tracestate`) of the active or given context. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** Context carried by message headers; trace context is observability data, never authority. */
export function contextFromHeaders(headers: Record<string, string | undefined>): Context {
  return propagation.extract(context.active(), headers);
}

/** A link to the span context in `headers` (for work resumed later that starts its own trace). */
export function linkFromHeaders(headers: Record<string, string | undefined>): Link[] {
  const sc = trace.getSpanContext(propagation.extract(context.active(), headers));
  return sc ? [{ context: sc }] : [];
}

/** Runs `fn` in a span that ends with it, recording failures. */
export async function withSpan<T>(
  name: string,
  opts: { attributes?: Attributes; kind?: SpanKind; parent?: Context; links?: Link[]; root?: boolean },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = opts.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links: opts.links, root: opts.root },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** Span attribute names: the platform's ids and the GenAI semantic-convention names. */
export const SpanAttr = {
  tenant: 'mesh.tenant',
  agentId: 'mesh.agent_id',
  taskId: 'mesh.task_id',
  contextId: 'mesh.context_id',
  executionId: 'mesh.execution_id',
  idempotencyKey: 'mesh.idempotency_key',
  outcome: 'mesh.outcome',
  genAiOperation: 'gen_ai.operation.name',
  genAiAgentId: 'gen_ai.agent.id',
  genAiToolName: 'gen_ai.tool.name',
  genAiToolCallId: 'gen_ai.tool.call.id',
} as const;

export { SpanKind };
