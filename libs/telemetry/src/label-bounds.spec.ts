import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LabelBounds } from './label-bounds.js';
import { MeshMetrics } from './metrics.js';

test('the first pairs keep their names; later pairs share the overflow series', () => {
  const b = new LabelBounds({ maxTenantAgentPairs: 2 });
  assert.deepEqual(b.apply({ tenant: 'acme', agent: 'a', outcome: 'completed' }), { tenant: 'acme', agent: 'a', outcome: 'completed' });
  assert.deepEqual(b.apply({ tenant: 'acme', agent: 'b', outcome: 'completed' }), { tenant: 'acme', agent: 'b', outcome: 'completed' });
  assert.deepEqual(b.apply({ tenant: 'globex', agent: 'a', outcome: 'failed' }), { tenant: '_other', agent: '_other', outcome: 'failed' });
  // A pair already admitted keeps its series.
  assert.deepEqual(b.apply({ tenant: 'acme', agent: 'a', outcome: 'failed' }), { tenant: 'acme', agent: 'a', outcome: 'failed' });
});

test('without tenant labels every series says tenant="_all", and pairs are counted per agent', () => {
  const b = new LabelBounds({ tenantLabels: false, maxTenantAgentPairs: 1 });
  assert.deepEqual(b.apply({ tenant: 'acme', agent: 'a' }), { tenant: '_all', agent: 'a' });
  assert.deepEqual(b.apply({ tenant: 'globex', agent: 'a' }), { tenant: '_all', agent: 'a' });
  assert.deepEqual(b.apply({ tenant: 'globex', agent: 'b' }), { tenant: '_other', agent: '_other' });
});

test('samples without tenant or agent labels pass unchanged', () => {
  const b = new LabelBounds({ maxTenantAgentPairs: 0 });
  assert.deepEqual(b.apply({ kind: 'x' }), { kind: 'x' });
});

test('MeshMetrics bounds mesh_tasks_total and mesh_admission_refusals_total', async () => {
  const m = new MeshMetrics({ defaultMetrics: false, labels: { maxTenantAgentPairs: 1 }, publicAgents: () => true });
  m.tasks.inc({ tenant: 'acme', agent: 'a', outcome: 'accepted' });
  m.tasks.inc({ tenant: 'evil', agent: 'x1', outcome: 'accepted' });
  m.tasks.inc({ tenant: 'evil', agent: 'x2', outcome: 'accepted' }, 2);
  m.admissionRefusals.inc({ tenant: 'evil', agent: 'x3', reason: 'RATE_LIMITED' });
  const text = await m.registry.metrics();
  assert.match(text, /^mesh_tasks_total\{tenant="acme",agent="a",outcome="accepted"\} 1$/m);
  assert.match(text, /^mesh_tasks_total\{tenant="_other",agent="_other",outcome="accepted"\} 3$/m);
  assert.match(text, /^mesh_admission_refusals_total\{tenant="_other",agent="_other",reason="RATE_LIMITED"\} 1$/m);
  assert.doesNotMatch(text, /evil|x1|x2|x3/);
});
