export { startTelemetry, traceHeaders, linkFromHeaders, withSpan, tracer, SpanAttr, SpanKind } from './tracing.js';
export { MeshMetrics } from './metrics.js';
export { MetricsModule } from './metrics.module.js';
export { CLUSTER_METRICS_ENV, serveClusterMetrics } from './cluster-metrics.js';
export { createLogger, routeConsoleTo, type Logger, silentLogger, PinoNestLogger } from './logging.js';
export { untracedProducer, untracedConsumer, startProducerSpans, withConsumerSpan } from './messaging.js';
export { LabelBounds, type LabelBoundsOptions } from './label-bounds.js';
export { agentLabel, privateAgentAlias, type PublicAgents } from './agent-labels.js';
