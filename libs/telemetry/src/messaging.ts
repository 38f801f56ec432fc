import { context, propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { isWrapped } from '@opentelemetry/instrumentation';
import { tracer } from './tracing.js';

/** A message about to be produced; its `headers` may carry the trace context it belongs to. */
export interface TracedMessage {
  topic: string;
  key?: string;
  headers: Record<string, string>;
}

type Wrapped = { __original?: unknown };

/** Puts back the originals of `methods` where the kafkajs instrumentation wrapped them on `client`. */
function unwrapped<T extends object>(client: T, methods: readonly string[]): T {
  const c = client as Record<string, unknown>;
  for (const name of methods) {
    const fn = c[name];
    if (typeof fn === 'function' && isWrapped(fn)) c[name] = (fn as Wrapped).__original;
  }
  return client;
}

/**
 * Removes the kafkajs instrumentation's wrappers from one producer. The instrumentation parents
 * every message of a `send`/`sendBatch` on the one context active at the call, so a producer
 * that sends a batch of messages belonging to different requests (the outbox relay) makes its
 * own per-message spans with `startProducerSpans` instead.
 */
export function untracedProducer<P extends object>(producer: P): P {
  return unwrapped(producer, ['send', 'sendBatch']);
}

/**
 * Removes the kafkajs instrumentation's wrapper from one consumer's `run`. The instrumentation
 * starts a receive span per batch (the root of a trace of its own) and a process span per message
 * that ends when the batch handler returns, not when the message is handled; a consumer that
 * makes its own span per message (`withConsumerSpan`, in the producer's trace, for as long as
 * the handling lasts) would only pay twice for spans that say less.
 */
export function untracedConsumer<C extends object>(consumer: C): C {
  return unwrapped(consumer, ['run']);
}

/**
 * One PRODUCER span per message, each a child of the context in the message's own headers (a
 * root when there is none), and headers rewritten to carry that span. `end` closes them all.
 */
export function startProducerSpans<M extends TracedMessage>(messages: M[]): { messages: M[]; end(err?: unknown): void } {
  const spans: Span[] = [];
  const out = messages.map((m) => {
    const parent = propagation.extract(ROOT_CONTEXT, m.headers);
    const span = tracer().startSpan(
      `send ${m.topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'kafka',
          'messaging.operation.name': 'send',
          'messaging.operation.type': 'send',
          'messaging.destination.name': m.topic,
          ...(m.key !== undefined ? { 'messaging.kafka.message.key': m.key } : {}),
        },
      },
      parent,
    );
    spans.push(span);
    const headers = { ...m.headers };
    propagation.inject(trace.setSpan(parent, span), headers);
    return { ...m, headers };
  });
  return {
    messages: out,
    end(err?: unknown) {
      for (const s of spans) {
        if (err !== undefined) {
          s.recordException(err as Error);
          s.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        }
        s.end();
      }
    },
  };
}

/**
 * Runs a consumer's handling of one message in a CONSUMER span that continues the trace in the
 * message's headers (trace context is observability data only, never authority).
 */
export async function withConsumerSpan<T>(
  topic: string,
  headers: Record<string, string | undefined>,
  attributes: Record<string, string | number | boolean>,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer().startSpan(
    `process ${topic}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.name': 'process',
        'messaging.operation.type': 'process',
        'messaging.destination.name': topic,
        ...attributes,
      },
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}
