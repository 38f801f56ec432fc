import type { Request, Response } from 'express';
import {
  context as contexts,
  isSpanContextValid,
  propagation,
  trace,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Context,
} from '@opentelemetry/api';
import { SpanAttr, tracer } from '@mesh/telemetry';
import type { AgentRecord } from '@mesh/contract';

/**
 * Starts the server span of an A2A request (ended when the response closes) and returns the
 * context it is active in: everything the request causes (the command, the worker's turn, its tool
 * calls) continues this trace through the outbox row and the message headers.
 */
export function startServerSpan(req: Request, res: Response, record: AgentRecord, tenant: string | undefined): Context {
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer().startSpan(
    `${req.method} /a2a/{agentId}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': req.method,
        'url.path': req.originalUrl.split('?')[0],
        [SpanAttr.agentId]: record.id,
        [SpanAttr.genAiAgentId]: record.id,
        ...(tenant ? { [SpanAttr.tenant]: tenant } : {}),
      },
    },
    parent,
  );
  // The caller can quote it to find this request's trace (in Jaeger: search by trace id). An id,
  // never authority: it grants nothing and is derived from nothing the caller must be trusted for.
  if (isSpanContextValid(span.spanContext())) res.setHeader('X-Trace-Id', span.spanContext().traceId);
  res.once('close', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  return trace.setSpan(parent, span);
}

/** Runs `fn` with the span's context active. */
export const withSpan = (ctx: Context, fn: () => void): void => contexts.with(ctx, fn);
