import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentsMetrics } from './agents.metrics.js';

// /metrics is served unauthenticated on the service port (loopback unless HTTP_HOST says otherwise)
// for Prometheus: it may name tenants, agents and tools, never a task, context, message, key,
// subject or payload. A label outside this list is a decision to make, not a line to add.
const ALLOWED = new Set([
  'tenant',
  'agent',
  'server',
  'tool',
  'outcome',
  'result',
  'resolution',
  'reason',
  'kind',
  'event',
  'state',
  'group',
  'topic',
  'partition',
  // HTTP requests: the matched route pattern (`/a2a/:agentId`), never a raw path or id.
  'method',
  'route',
  'status_class',
]);

test('metrics labels carry no task, message, key or subject: only the allowed dimensions', () => {
  const metrics = new AgentsMetrics('refund');
  // prom-client's process metrics (nodejs_*, process_*) carry only runtime labels (type, space, version).
  const all = (metrics.registry.getMetricsAsArray() as unknown as Array<{ name: string; labelNames?: string[] }>).filter(
    (m) => !/^(nodejs|process)_/.test(m.name),
  );
  assert.ok(all.length > 5);
  for (const m of all) for (const l of m.labelNames ?? []) assert.ok(ALLOWED.has(l), `${m.name} has label "${l}"`);
});
